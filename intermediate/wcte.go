package intermediate

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Returning runs a data-modifying WITH query (a planner.CTEStep's plan,
// a write with RETURNING) on conns (one per target, the session's, in its
// transaction) and keeps its rows, in text, for
// planner.WritableCTE.OuterSQL, with their columns' type names as the
// clusters' catalogs name them (they must agree). The rows held are
// bounded by lim (54000 past it). floatDigits is the connections'
// extra_float_digits: below 1 a float's text is not exact, and a float
// column is refused (0A000).
func Returning(step *planner.CTEStep, targets []planner.Target, conns []*backend.Conn, lim Limits, floatDigits int, client Client) (planner.CTERows, error) {
	if lim.MaxRows <= 0 {
		lim.MaxRows = DefaultMaxRows
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if step.Plan.Mode() == planner.ModeReplicate && len(conns) > 1 {
		// Every copy of a reference table: the first copy's rows are
		// the statement's (the first copy's locks decide, as for any
		// write of the copies), the others are written alike.
		rows, err := Returning(step, targets[:1], conns[:1], lim, floatDigits, client)
		if err != nil {
			return rows, err
		}
		_, err = Returning(&planner.CTEStep{Name: step.Name, Plan: step.Plan}, targets[1:], conns[1:], lim, floatDigits, client)
		return rows, err
	}
	if !step.Returns {
		for i, b := range conns {
			q := targets[i].SQL
			if q == "" {
				q = step.Plan.SQL
			}
			if err := b.SimpleExec(q, nil); err != nil {
				return planner.CTERows{}, pgwire.Annotate(err, b.Cluster())
			}
		}
		return planner.CTERows{}, nil
	}
	c := &cteCollector{notices: notices{client}, lim: lim}
	var fields []pgproto3.FieldDescription
	// The shards' rows one after another, whatever the write's plan
	// (a Route, an InsertSplit).
	concat := &planner.Plan{Kind: step.Plan.Kind, Returns: true, Root: &planner.Route{}}
	e := &merge.Exec{Plan: concat, Colls: backend.Collations(conns), FloatDigits: floatDigits, Client: c}
	_, err := e.RunQueries(step.Plan.SQL, targets, conns, func(fs []pgproto3.FieldDescription) error {
		fields = append(fields, fs...)
		return nil
	})
	if err == nil {
		err = c.err
	}
	if _, ok := err.(*merge.NeedsFallback); ok {
		return planner.CTERows{}, sqlerr.New(sqlerr.FeatureNotSupported, "the data-modifying WITH query %s cannot be run on its own across shards", step.Name)
	}
	if err != nil {
		return planner.CTERows{}, err
	}
	out, err := columnsOf(step, fields, conns, floatDigits)
	out.Rows = c.rows
	return out, err
}

// DescribeReturning is a data-modifying WITH query's columns (none
// without RETURNING) and its parameters' types, its rows not run
// (described on b, a connection to a cluster it runs on, as sql, with
// the parameter types oids).
func DescribeReturning(step *planner.CTEStep, b *backend.Conn, sql string, oids []uint32) (planner.CTERows, []uint32, error) {
	params, desc, err := DescribeStatement(b, sql, oids)
	if err != nil || !step.Returns {
		return planner.CTERows{}, params, err
	}
	if desc == nil {
		return planner.CTERows{}, params, sqlerr.New(sqlerr.InternalError, "cluster %s describes %s as returning no rows", b.Cluster(), sql)
	}
	rows, err := columnsOf(step, desc.Fields, []*backend.Conn{b}, 1)
	return rows, params, err
}

// DescribeStatement parses sql on b with the parameter types oids and
// describes it: the types of its parameters and its rows (nil: none).
func DescribeStatement(b *backend.Conn, sql string, oids []uint32) ([]uint32, *pgproto3.RowDescription, error) {
	params, desc, err := describeStatement(b, sql, oids)
	if err != nil {
		return nil, nil, pgwire.Annotate(err, b.Cluster())
	}
	return params, desc, nil
}

// describeStatement is DescribeStatement, its error as the backend gave it.
func describeStatement(b *backend.Conn, sql string, oids []uint32) ([]uint32, *pgproto3.RowDescription, error) {
	send(b, &pgproto3.Parse{Query: sql, ParameterOIDs: oids}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
	params := []uint32{}
	var desc *pgproto3.RowDescription
	err := read(b, func(m pgwire.RawMessage) error {
		switch m.Type {
		case 't':
			var d pgproto3.ParameterDescription
			if err := d.Decode(m.Body); err != nil {
				return err
			}
			params = append([]uint32(nil), d.ParameterOIDs...)
		case 'T':
			var d pgproto3.RowDescription
			if err := d.Decode(m.Body); err != nil {
				return err
			}
			desc = pgwire.CopyRowDescription(&d)
		}
		return nil
	})
	return params, desc, err
}

// columnsOf names a WITH query's columns and their types, as the catalog
// of every one of conns names them.
func columnsOf(step *planner.CTEStep, fields []pgproto3.FieldDescription, conns []*backend.Conn, floatDigits int) (planner.CTERows, error) {
	var out planner.CTERows
	q := make([]string, len(fields))
	for i, f := range fields {
		if (f.DataTypeOID == 700 || f.DataTypeOID == 701) && floatDigits < 1 {
			return out, sqlerr.New(sqlerr.FeatureNotSupported, "a real or double precision column of the data-modifying WITH query %s with extra_float_digits below 1 is not supported across groups", step.Name)
		}
		out.Names = append(out.Names, string(f.Name))
		q[i] = "pg_catalog.format_type(" + strconv.FormatUint(uint64(f.DataTypeOID), 10) + ", " + strconv.FormatInt(int64(f.TypeModifier), 10) + ")"
	}
	sql := "SELECT " + strings.Join(q, ", ")
	for i, b := range conns {
		rows, err := b.Query(sql)
		if err != nil {
			return out, pgwire.Annotate(err, b.Cluster())
		}
		if len(rows) != 1 || len(rows[0]) != len(fields) {
			return out, sqlerr.New(sqlerr.InternalError, "format_type answered %d rows on %s", len(rows), b.Cluster())
		}
		for j, v := range rows[0] {
			if v == nil {
				return out, sqlerr.New(sqlerr.FeatureNotSupported, "the type of column %s of the WITH query %s (oid %d) is not known on %s", fields[j].Name, step.Name, fields[j].DataTypeOID, b.Cluster())
			}
			if i == 0 {
				out.Types = append(out.Types, string(v))
			} else if out.Types[j] != string(v) {
				// A type of its own on each cluster: its oid differs.
				return out, sqlerr.New(sqlerr.FeatureNotSupported, "the type of column %s of the WITH query %s differs between clusters", fields[j].Name, step.Name)
			}
		}
	}
	return out, nil
}

// RelayRows runs sql on b with the extended protocol, its results in
// formats, and relays its rows to client (no RowDescription: Describe
// gave it); it returns the command tag.
func RelayRows(b *backend.Conn, sql string, formats []int16, client Client) (string, error) {
	s := &Statement{Client: client}
	return s.relay(b, &pgproto3.Parse{Query: sql}, &pgproto3.Bind{ResultFormatCodes: formats})
}

// cteCollector keeps a data-modifying WITH query's rows within limits.
type cteCollector struct {
	notices
	lim   Limits
	rows  [][][]byte
	bytes int64
	err   error
}

func (c *cteCollector) SendRow(dr *pgproto3.DataRow) error {
	if c.err != nil {
		return c.err
	}
	row := make([][]byte, len(dr.Values))
	for i, v := range dr.Values {
		if v != nil {
			row[i] = append([]byte{}, v...)
			c.bytes += int64(len(v))
		}
	}
	c.rows = append(c.rows, row)
	switch {
	case int64(len(c.rows)) > c.lim.MaxRows:
		c.err = cteOverLimit("max_rows", c.lim.MaxRows, "rows")
	case c.bytes > c.lim.MaxBytes:
		c.err = cteOverLimit("max_bytes", c.lim.MaxBytes, "bytes")
	}
	return c.err
}

func cteOverLimit(key string, limit int64, what string) error {
	return sqlerr.New("54000", "the RETURNING rows of a data-modifying WITH query exceed proxy.intermediate.%s (%d %s)", key, limit, what).
		WithHint("Add conditions that select fewer rows, or raise proxy.intermediate.%s.", key)
}
