package planner

// BindParams reads a Bind message's parameter values and format codes
// (none: text; one: for all) with the statement's declared types (oids,
// missing ones 0) as Params.
func BindParams(values [][]byte, formats []int16, oids []uint32) []Param {
	ps := make([]Param, len(values))
	for i, v := range values {
		f := FormatCode(formats, i)
		var oid uint32
		if i < len(oids) {
			oid = oids[i]
		}
		ps[i] = Param{Value: v, Null: v == nil, Binary: f == 1, OID: oid}
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
