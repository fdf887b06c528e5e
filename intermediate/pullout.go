package intermediate

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// MaxPulloutValues bounds the values of an IN (subquery) the pullout
// binds; beyond them the statement runs over intermediate results as a
// whole.
const MaxPulloutValues = 10000

// subResult is what a pullout's subquery returned.
type subResult struct {
	oid    uint32
	binary bool
	vals   [][]byte // nil entries are NULLs
	n      int      // rows read (more than vals when past the bound)
	cols   int
}

// runPullout executes a Pullout: the subquery, its values bound as the
// outer statement's parameter, the outer statement on the one cluster its
// route names (or over intermediate results); po.Orig when the pullout
// cannot answer exactly.
func (s *Statement) runPullout(po *planner.Pullout) (string, error) {
	s.connOnce()
	ok, err := s.pulloutCheck(po)
	if err != nil {
		return "", err
	}
	var res *subResult
	if ok {
		if res, err = s.runSub(po); err != nil {
			return "", err
		}
		// A float's text depends on extra_float_digits: only its binary
		// form is exact.
		ok = res != nil && res.cols == 1 && res.n == len(res.vals) && (po.In || res.n <= 1) &&
			(res.binary || res.oid != 700 && res.oid != 701)
	}
	if !ok {
		return s.with(po.Orig, s.Params).Run()
	}
	param, err := s.pulloutParam(po, res)
	if err != nil {
		return "", err
	}
	params := make([]planner.Param, po.Param)
	copy(params, s.Params)
	params[po.Param-1] = param
	if po.Outer.Mode() == planner.ModeIntermediate {
		return s.with(po.Outer, params).Run()
	}
	targets, err := po.Outer.Targets(params)
	if err != nil {
		return "", err
	}
	if len(targets) != 1 || po.Outer.Lookup != nil {
		if po.Steps == nil {
			return s.with(po.Orig, s.Params).Run()
		}
		return s.with(po.Steps, params).Run()
	}
	t := targets[0]
	b, err := s.Conn(t.Cluster)
	if err != nil {
		return "", err
	}
	q := t.SQL
	if q == "" {
		q = po.Outer.SQL
	}
	return s.relay(b, &pgproto3.Parse{Query: q, ParameterOIDs: planner.OIDsOf(params, t.Params)}, planner.BindOf(params, t.Params, s.Formats))
}

// connOnce makes every step ask for a cluster's connection once.
func (s *Statement) connOnce() {
	conns, get := map[string]*backend.Conn{}, s.Conn
	s.Conn = func(c string) (*backend.Conn, error) {
		if b, ok := conns[c]; ok {
			return b, nil
		}
		b, err := get(c)
		if err == nil {
			conns[c] = b
		}
		return b, err
	}
}

// with is a statement of plan with params, run as s is.
func (s *Statement) with(plan *planner.Plan, params []planner.Param) *Statement {
	return &Statement{Plan: plan, Params: params, Formats: s.Formats, Describe: s.Describe, Limits: s.Limits,
		Conn: s.Conn, Client: s.Client, Wrote: s.Wrote, PulledOn: s.PulledOn, Scratch: s.Scratch}
}

// pulloutCheck asks the catalog whether the subquery's tables have every
// column name it reads unqualified: if not, the name is the outer
// query's, and the subquery cannot run on its own.
func (s *Statement) pulloutCheck(po *planner.Pullout) (bool, error) {
	if len(po.Names) == 0 {
		return true, nil
	}
	b, err := s.Conn(po.CheckOn)
	if err != nil {
		return false, err
	}
	rows, err := b.Query(po.CheckSQL())
	if err != nil {
		return false, pgwire.Annotate(err, b.Cluster())
	}
	return len(rows) == 1 && string(rows[0][0]) == "0", nil
}

// collector keeps a subquery's values (the first column of each row).
type collector struct {
	notices
	res *subResult
	max int
}

func (c *collector) add(vals [][]byte) {
	c.res.n++
	if c.res.n <= c.max && len(vals) > 0 {
		var v []byte
		if vals[0] != nil {
			v = append([]byte{}, vals[0]...)
		}
		c.res.vals = append(c.res.vals, v)
	}
}

func (c *collector) SendRow(dr *pgproto3.DataRow) error { c.add(dr.Values); return nil }

// notices is the rest of a merge.Client that keeps rows for the proxy:
// the shards' notices and parameter changes go on to the client.
type notices struct{ client Client }

func (c notices) SendRaw(typ byte, body []byte) {
	if typ == 'N' {
		c.client.SendRaw(typ, body)
	}
}

func (c notices) ParameterStatus(ps *pgproto3.ParameterStatus) { c.client.ParameterStatus(ps) }
func (c notices) ShardFailed(*backend.Conn)                    {}
func (c notices) Flush() error                                 { return nil }

// runSub runs the subquery as its own plan and collects its values (at
// most two for a scalar subquery, MaxPulloutValues for IN).
func (s *Statement) runSub(po *planner.Pullout) (*subResult, error) {
	c := &collector{notices: notices{s.Client}, res: &subResult{}, max: 2}
	if po.In {
		c.max = MaxPulloutValues
	}
	if po.Sub.Mode() == planner.ModeIntermediate {
		err := s.with(po.Sub, nil).Stream(func(desc *pgproto3.RowDescription, _ []string) error {
			c.res.cols = len(desc.Fields)
			if len(desc.Fields) > 0 {
				c.res.oid, c.res.binary = desc.Fields[0].DataTypeOID, desc.Fields[0].Format == 1
			}
			return nil
		}, func(vals [][]byte) error { c.add(vals); return nil })
		return c.res, err
	}
	targets, err := po.Sub.Targets(nil)
	if err != nil {
		return nil, err
	}
	conns := make([]*backend.Conn, len(targets))
	for i, t := range targets {
		if conns[i], err = s.Conn(t.Cluster); err != nil {
			return nil, err
		}
	}
	e := &merge.Exec{Plan: po.Sub, Colls: backend.Collations(conns), FloatDigits: 1}
	if s.Merge != nil {
		e = s.Merge(po.Sub, e.Colls)
	}
	e.Client = c
	_, err = e.RunQueries(po.Sub.SQL, targets, conns, func(fs []pgproto3.FieldDescription) error {
		c.res.cols = len(fs)
		if len(fs) > 0 {
			c.res.oid = fs[0].DataTypeOID
		}
		return nil
	})
	if _, ok := err.(*merge.NeedsFallback); ok {
		return nil, nil // the merge cannot: Orig runs
	}
	return c.res, err
}

// pulloutParam is the subquery's result as the outer statement's
// parameter: its one value (NULL for no row), or an array of its values.
func (s *Statement) pulloutParam(po *planner.Pullout, res *subResult) (planner.Param, error) {
	if !po.In {
		if len(res.vals) == 0 || res.vals[0] == nil {
			return planner.Param{Null: true, OID: res.oid}, nil
		}
		return planner.Param{Value: res.vals[0], Binary: res.binary, OID: res.oid}, nil
	}
	b, err := s.Conn(po.CheckOn)
	if err != nil {
		return planner.Param{}, err
	}
	rows, err := b.Query("SELECT typarray FROM pg_catalog.pg_type WHERE oid = " + strconv.FormatUint(uint64(res.oid), 10))
	if err != nil {
		return planner.Param{}, pgwire.Annotate(err, b.Cluster())
	}
	arr, _ := strconv.ParseUint(string(rowValue(rows)), 10, 32)
	if arr == 0 {
		return planner.Param{}, sqlerr.New(sqlerr.FeatureNotSupported, "IN (subquery) over a type without an array type is not supported")
	}
	p := planner.Param{OID: uint32(arr), Binary: res.binary}
	if res.binary {
		p.Value = binaryArray(res.oid, res.vals)
	} else {
		p.Value = textArray(res.vals)
	}
	return p, nil
}

func rowValue(rows [][][]byte) []byte {
	if len(rows) != 1 || len(rows[0]) != 1 {
		return nil
	}
	return rows[0][0]
}

// binaryArray is a one-dimensional array of elem values in the binary
// format (array_recv).
func binaryArray(elem uint32, vals [][]byte) []byte {
	hasNull := uint32(0)
	for _, v := range vals {
		if v == nil {
			hasNull = 1
		}
	}
	if len(vals) == 0 {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 0), 0), elem)
	}
	out := binary.BigEndian.AppendUint32(nil, 1)
	out = binary.BigEndian.AppendUint32(out, hasNull)
	out = binary.BigEndian.AppendUint32(out, elem)
	out = binary.BigEndian.AppendUint32(out, uint32(len(vals)))
	out = binary.BigEndian.AppendUint32(out, 1)
	for _, v := range vals {
		if v == nil {
			out = binary.BigEndian.AppendUint32(out, 0xFFFFFFFF)
			continue
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(v)))
		out = append(out, v...)
	}
	return out
}

// textArray is a one-dimensional array of text values, every element
// quoted.
func textArray(vals [][]byte) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		if v == nil {
			b.WriteString("NULL")
			continue
		}
		b.WriteByte('"')
		for _, c := range string(v) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return []byte(b.String())
}
