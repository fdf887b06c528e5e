package topology

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decoder walks a yaml.Node tree and collects diagnostics; it never stops
// at the first problem.
type decoder struct {
	file  string
	lines []string // source lines, to place positions inside scalars
	diags []Diagnostic
	// clearPassword: the file holds a password itself (not from ${ENV}
	// or password_file:), for the warning of warnReadable.
	clearPassword bool
}

func pos(n *yaml.Node) Position { return Position{Line: n.Line, Col: n.Column} }

func (d *decoder) report(p Position, warning bool, format string, args ...any) {
	d.diags = append(d.diags, Diagnostic{File: d.file, Line: p.Line, Col: p.Col, Message: fmt.Sprintf(format, args...), Warning: warning})
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.report(pos(n), false, format, args...)
}

func (d *decoder) warnf(n *yaml.Node, format string, args ...any) {
	d.report(pos(n), true, format, args...)
}

// hasErrors reports whether any diagnostic so far is an error.
func (d *decoder) hasErrors() bool {
	for _, x := range d.diags {
		if !x.Warning {
			return true
		}
	}
	return false
}

// deref follows aliases (*anchor) to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// describe names a node's kind for "must be X, not Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "empty"
		case "!!int":
			return "the integer " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!float":
			return "the number " + n.Value
		}
		return strconv.Quote(n.Value)
	}
	return "an unsupported YAML node"
}

// field is one key: value pair of a mapping.
type field struct {
	key, val *yaml.Node
}

// pairs returns the pairs of a mapping node, reporting duplicate keys. A
// null node (a key with no value) is an empty mapping.
func (d *decoder) pairs(n *yaml.Node, what string) ([]field, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s must be a mapping, not %s", what, describe(n))
		return nil, false
	}
	seen := map[string]*yaml.Node{}
	var out []field
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "keys in %s must be plain names, not %s", what, describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, "duplicate key %q in %s (first at line %d)", k.Value, what, first.Line)
			continue
		}
		seen[k.Value] = k
		out = append(out, field{k, v})
	}
	return out, true
}

// fields decodes a mapping with a fixed set of keys, reporting unknown
// keys with a suggestion. The result maps each key present to its pair.
//
// A misspelt key (colum:) is reported once and then read as the key it
// most likely means, so that one typo does not also produce "needs
// column:" and the value behind it is still checked.
func (d *decoder) fields(n *yaml.Node, what string, known ...string) (map[string]field, bool) {
	ps, ok := d.pairs(n, what)
	if !ok {
		return nil, false
	}
	out := make(map[string]field, len(ps))
	var typos []field
	for _, p := range ps {
		if contains(known, p.key.Value) {
			out[p.key.Value] = p
		} else {
			typos = append(typos, p)
		}
	}
	for _, p := range typos {
		s, ok := suggest(p.key.Value, known)
		if !ok {
			d.errorf(p.key, "unknown key %q in %s (expected %s)", p.key.Value, what, strings.Join(known, ", "))
			continue
		}
		d.errorf(p.key, "unknown key %q in %s (did you mean %q?)", p.key.Value, what, s)
		if _, taken := out[s]; !taken {
			out[s] = p
		}
	}
	return out, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// list returns the items of a sequence node.
func (d *decoder) list(n *yaml.Node, what string) ([]*yaml.Node, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "%s must be a list, not %s", what, describe(n))
		return nil, false
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = deref(c)
	}
	return out, true
}

// str reads a non-empty scalar. Any scalar tag is accepted (a cluster may
// be called 1), but not null, mappings or lists.
func (d *decoder) str(n *yaml.Node, what string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, "%s must be a string, not %s", what, describe(n))
		return "", false
	}
	if n.Value == "" {
		d.errorf(n, "%s must not be empty", what)
		return "", false
	}
	return n.Value, true
}

// integer reads an integer scalar.
func (d *decoder) integer(n *yaml.Node, what string) (int64, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.errorf(n, "%s must be an integer, not %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil {
		d.errorf(n, "%s %s is out of range for a 64-bit integer", what, n.Value)
		return 0, false
	}
	return v, true
}

// boolean reads a true/false scalar.
func (d *decoder) boolean(n *yaml.Node, what string) (bool, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		d.errorf(n, "%s must be true or false, not %s", what, describe(n))
		return false, false
	}
	return strings.EqualFold(n.Value, "true"), true
}

// oneOf reads a scalar that must be one of choices, with a suggestion.
func (d *decoder) oneOf(n *yaml.Node, what string, choices ...string) (string, bool) {
	s, ok := d.str(n, what)
	if !ok {
		return "", false
	}
	if contains(choices, s) {
		return s, true
	}
	msg := fmt.Sprintf("unknown %s %q (expected %s)", what, s, orList(choices))
	if sug, ok := suggest(s, choices); ok {
		msg = fmt.Sprintf("unknown %s %q (did you mean %q?)", what, s, sug)
	}
	d.errorf(n, "%s", msg)
	return "", false
}

// orList formats choices as "a, b or c".
func orList(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// required reports a missing key at the mapping that lacks it.
func (d *decoder) required(fs map[string]field, parent *yaml.Node, key, what string) (field, bool) {
	f, ok := fs[key]
	if !ok {
		d.errorf(parent, "%s needs %s:", what, key)
	}
	return f, ok
}

// innerPosition returns the position of byte offset off inside scalar n's
// value, when the value appears verbatim on one line of the source (a
// plain or quoted scalar without escapes before off); otherwise the
// scalar's own position.
func (d *decoder) innerPosition(n *yaml.Node, off int) Position {
	p := pos(n)
	if n.Line < 1 || n.Line > len(d.lines) || off < 0 || off > len(n.Value) {
		return p
	}
	line := []rune(d.lines[n.Line-1])
	start := n.Column - 1
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		start++
	case 0, yaml.FlowStyle:
	default:
		return p
	}
	if start > len(line) || !strings.HasPrefix(string(line[start:]), n.Value[:off]) {
		return p
	}
	return Position{Line: n.Line, Col: n.Column + (start - (n.Column - 1)) + len([]rune(n.Value[:off]))}
}
