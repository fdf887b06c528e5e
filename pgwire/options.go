package pgwire

import "strings"

// ParseOptions reads the `-c name=value` and `--name=value` forms of the
// startup `options` parameter.
func ParseOptions(s string) map[string]string {
	out := map[string]string{}
	f := strings.Fields(s)
	for i := 0; i < len(f); i++ {
		a := f[i]
		switch {
		case a == "-c" && i+1 < len(f):
			i++
			if k, v, ok := strings.Cut(f[i], "="); ok {
				out[k] = v
			}
		case strings.HasPrefix(a, "-c"):
			if k, v, ok := strings.Cut(a[2:], "="); ok {
				out[k] = v
			}
		case strings.HasPrefix(a, "--"):
			if k, v, ok := strings.Cut(a[2:], "="); ok {
				out[strings.ReplaceAll(k, "-", "_")] = v
			}
		}
	}
	return out
}
