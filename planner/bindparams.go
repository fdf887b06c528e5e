package planner

import "github.com/jackc/pgx/v5/pgproto3"

// BindParams reads a Bind message's parameter values and format codes
// (none: text; one: for all) with the statement's declared types (oids,
// missing ones 0) as Params.
func BindParams(values [][]byte, formats []int16, oids []uint32) []Param {
	return AppendBindParams(make([]Param, 0, len(values)), values, formats, oids)
}

// AppendBindParams is BindParams appending to ps.
func AppendBindParams(ps []Param, values [][]byte, formats []int16, oids []uint32) []Param {
	for i, v := range values {
		f := FormatCode(formats, i)
		var oid uint32
		if i < len(oids) {
			oid = oids[i]
		}
		ps = append(ps, Param{Value: v, Null: v == nil, Binary: f == 1, OID: oid})
	}
	return ps
}

// FormatCode is the format of value i under a message's format codes
// (none: text; one: for all).
func FormatCode(formats []int16, i int) int16 {
	switch {
	case len(formats) == 1:
		return formats[0]
	case i < len(formats):
		return formats[i]
	}
	return 0
}

// Bind is the client's Bind m for statement name on the cluster of
// target t: the parameters t's statement takes (all, unless t.Params
// picks some, t.Arg replaces one), then t.Extra if set. It is a value: sent at once, it need not reach the heap.
func (t Target) Bind(m *pgproto3.Bind, name string) pgproto3.Bind {
	bind := *m
	bind.PreparedStatement = name
	if t.Params != nil {
		bind.Parameters = make([][]byte, len(t.Params))
		if len(m.ParameterFormatCodes) > 1 {
			bind.ParameterFormatCodes = make([]int16, len(t.Params))
		}
		for j, k := range t.Params {
			bind.Parameters[j] = m.Parameters[k]
			if len(m.ParameterFormatCodes) > 1 {
				bind.ParameterFormatCodes[j] = m.ParameterFormatCodes[k]
			}
		}
	}
	if t.Arg != nil {
		ps := make([][]byte, len(bind.Parameters))
		for j := range ps {
			k := j
			if t.Params != nil {
				k = t.Params[j]
			}
			ps[j] = bind.Parameters[j]
			if k == t.Arg.Index {
				ps[j] = t.Arg.Value
			}
		}
		bind.Parameters = ps
	}
	if t.Extra != nil {
		n := len(bind.Parameters)
		bind.Parameters = append(bind.Parameters[:n:n], t.Extra)
		switch fc := bind.ParameterFormatCodes; {
		case len(fc) == 1 && fc[0] != 0: // one format for all: each its own now
			bind.ParameterFormatCodes = make([]int16, n+1)
			for i := range n {
				bind.ParameterFormatCodes[i] = fc[0]
			}
		case len(fc) > 1:
			bind.ParameterFormatCodes = append(fc[:n:n], 0)
		}
	}
	return bind
}

// BindOf is a Bind of params idx (nil: all; indices past the end are
// skipped) with their own formats and the result formats given.
func BindOf(params []Param, idx []int, formats []int16) *pgproto3.Bind {
	return BindArg(params, idx, formats, nil)
}

// BindArg is BindOf with arg, if set, in place of the parameter it
// replaces (Target.Arg: an ANY array cut to the target's cluster).
func BindArg(params []Param, idx []int, formats []int16, arg *TargetArg) *pgproto3.Bind {
	b := &pgproto3.Bind{ResultFormatCodes: formats}
	pick := func(k int) {
		p := params[k]
		if arg != nil && k == arg.Index {
			p.Null, p.Value = false, arg.Value
		}
		f := int16(0)
		if p.Binary {
			f = 1
		}
		b.ParameterFormatCodes = append(b.ParameterFormatCodes, f)
		if p.Null {
			b.Parameters = append(b.Parameters, nil)
		} else {
			b.Parameters = append(b.Parameters, p.Value)
		}
	}
	if idx == nil {
		for k := range params {
			pick(k)
		}
	}
	for _, k := range idx {
		if k < len(params) {
			pick(k)
		}
	}
	return b
}

// OIDsOf are the declared types of params idx (nil: all), for a Parse.
func OIDsOf(params []Param, idx []int) []uint32 {
	var out []uint32
	if idx == nil {
		for _, p := range params {
			out = append(out, p.OID)
		}
	}
	for _, k := range idx {
		if k < len(params) {
			out = append(out, params[k].OID)
		}
	}
	return out
}

// ClusterOf names the cluster of targets[i].
func ClusterOf(targets []Target) func(int) string {
	return func(i int) string { return targets[i].Cluster }
}
