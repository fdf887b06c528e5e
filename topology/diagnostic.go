package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Diagnostic is one problem found in a topology file.
type Diagnostic struct {
	File      string
	Line, Col int
	Message   string
	Warning   bool // a warning does not refuse the file
}

// String formats the diagnostic as "file:line:col: message", with
// "warning: " before the message of a warning.
func (d Diagnostic) String() string {
	w := ""
	if d.Warning {
		w = "warning: "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", d.File, d.Line, d.Col, w, d.Message)
}

// ValidationError refuses a topology file. It lists every problem found,
// errors and warnings, sorted by position.
type ValidationError struct {
	Diagnostics []Diagnostic
}

// Error returns one diagnostic per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Errors returns the diagnostics that are not warnings.
func (e *ValidationError) Errors() []Diagnostic {
	var out []Diagnostic
	for _, d := range e.Diagnostics {
		if !d.Warning {
			out = append(out, d)
		}
	}
	return out
}

func sortDiagnostics(ds []Diagnostic) {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a plausible typo.
func suggest(s string, candidates []string) (string, bool) {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestDist && d < len(s) {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
