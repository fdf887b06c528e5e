package intermediate

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Limits bound what one statement moves to the coordinator; 0 is no limit.
type Limits struct {
	MaxRows  int64
	MaxBytes int64
}

// Default limits, used when the topology sets none.
const (
	DefaultMaxRows  = 10_000_000
	DefaultMaxBytes = 1 << 30
)

// Client is the client session the coordinator's answer goes to.
type Client interface {
	// SendRaw buffers a message for the client, as the backend sent it.
	SendRaw(typ byte, body []byte)
	// ParameterStatus passes on a parameter change.
	ParameterStatus(*pgproto3.ParameterStatus)
}

// Statement is one execution of an Intermediate plan.
type Statement struct {
	Plan *planner.Plan
	// Params are the Bind parameters (extended protocol); nil in the simple
	// protocol, where the plan's statements carry literals.
	Params []planner.Param
	// Formats are the client's result formats (nil: text).
	Formats []int16
	// Describe sends the RowDescription before the rows (simple protocol).
	Describe bool
	Limits   Limits
	// Conn returns the session's connection to a cluster (inside the
	// session's transaction, if any). It is called once per cluster.
	Conn   func(cluster string) (*backend.Conn, error)
	Client Client
	// Wrote and PulledOn are the client's transaction's clusters written
	// on and coordinator holding temporary tables (nil outside a
	// transaction, or when it does not commit in two phases): the
	// statement is refused by CheckReadInTx, or sets *PulledOn.
	Wrote    map[string]bool
	PulledOn *string
	// Scratch, when set, returns a connection to the coordinator outside
	// the session's transaction for the temporary tables and the final
	// statement (a write's source read: stream.go); every pull, the
	// coordinator's own cluster's too, then reads through Conn.
	Scratch func(cluster string) (*backend.Conn, error)
	// Joined reports whether the session's transaction holds a connection
	// to a cluster already. With Scratch, when it does not hold the
	// coordinator's, the pulls from the coordinator's own cluster read on
	// the Scratch connection (they see what the transaction would: it has
	// done nothing there yet), so the statement needs one connection to
	// that cluster, not two.
	Joined func(cluster string) bool
	// Release, with Scratch, gives back the Scratch coordinator as soon
	// as the statement has ended on it (close), before the caller writes
	// the rows it read (package xwrite) over the session's connections.
	Release func(*backend.Conn)
	// Merge, when set, makes the merge of a pullout's subquery with the
	// session's output settings (extra_float_digits, DateStyle,
	// IntervalStyle, TimeZone: the text the shards answer in); unset,
	// the defaults.
	Merge func(plan *planner.Plan, colls []*backend.CollationInfo) *merge.Exec

	im *planner.Intermediate
	// local: the coordinator's own cluster is read on the coordinator's
	// connection (no Scratch, or Scratch and not Joined).
	local   bool
	sources [][]planner.PullSource // per pull, the clusters it reads
	coord   *backend.Conn
	conns   map[string]*backend.Conn
	began   bool
	created []string
	rows    int64
	bytes   int64
}

// Run executes the statement and returns its command tag.
func (s *Statement) Run() (string, error) {
	if po, ok := s.Plan.Root.(*planner.Pullout); ok {
		return s.runPullout(po)
	}
	if err := s.open(true); err != nil {
		return "", s.close(err)
	}
	for i, p := range s.im.Pulls {
		if err := s.pull(p, s.sources[i]); err != nil {
			return "", s.close(err)
		}
	}
	tag, err := s.final()
	return tag, s.close(err)
}

// open resolves the clusters each pull reads (narrow: by the keys its
// conditions name; else every cluster that may hold its rows), checks
// collations and opens the coordinator's transaction.
func (s *Statement) open(narrow bool) error {
	im, ok := s.Plan.Root.(*planner.Intermediate)
	if !ok {
		return sqlerr.New(sqlerr.InternalError, "not an intermediate plan")
	}
	s.im = im
	s.sources = make([][]planner.PullSource, len(im.Pulls))
	for i := range im.Pulls {
		p := &im.Pulls[i]
		if !narrow {
			p = &planner.Pull{Clusters: p.Clusters, SQL: p.SQL, Params: p.Params}
		}
		s.sources[i] = p.Sources(s.Params)
	}
	if s.PulledOn != nil {
		if err := CheckReadInTx(im.Coordinator, s.Wrote); err != nil {
			return err
		}
		*s.PulledOn = im.Coordinator
	}
	getCoord := s.Conn
	if s.Scratch != nil {
		getCoord = s.Scratch
	}
	s.local = s.Scratch == nil || s.Joined != nil && !s.Joined(im.Coordinator)
	coord, err := getCoord(im.Coordinator)
	if err != nil {
		return err
	}
	s.coord, s.conns = coord, map[string]*backend.Conn{}
	conns := []*backend.Conn{coord}
	for _, srcs := range s.sources {
		for _, src := range srcs {
			c := src.Cluster
			if _, ok := s.conns[c]; ok || c == im.Coordinator && s.local {
				continue
			}
			b, err := s.conn(c)
			if err != nil {
				return err
			}
			conns = append(conns, b)
		}
	}
	colls := backend.Collations(conns)
	for i, ci := range colls[1:] {
		if ci.Collation != colls[0].Collation || ci.Collation == "unknown" {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"intermediate results: the default collation of cluster %s (%s) differs from the coordinator %s's (%s)",
				conns[i+1].Cluster(), ci.Collation, coord.Cluster(), colls[0].Collation).
				WithDetail("%s", s.im.Cause).
				WithHint("Give every cluster the same default collation, or add a condition on the shard key.")
		}
	}
	if s.Plan.Kind == planner.DeclareCursor {
		if coord.TxStatus == 'I' && !s.Plan.Cursor.WithHold {
			return sqlerr.New("25P01", "DECLARE CURSOR can only be used in transaction blocks")
		}
		s.im = renameTemps(im, tempTag.Add(1))
	}
	if coord.TxStatus == 'I' {
		s.began = true
		return exec(coord, "BEGIN")
	}
	return nil
}

// conn returns the connection to cluster c; the coordinator's own is
// never asked for twice.
func (s *Statement) conn(c string) (*backend.Conn, error) {
	if c == s.im.Coordinator && s.local {
		return s.coord, nil
	}
	if b, ok := s.conns[c]; ok {
		return b, nil
	}
	b, err := s.Conn(c)
	if err == nil {
		s.conns[c] = b
	}
	return b, err
}

// close ends the statement on the coordinator: its temporary tables go
// (COMMIT of the transaction it opened, or DROP inside the client's),
// and err, the statement's outcome, is returned.
func (s *Statement) close(err error) error {
	if s.coord == nil || s.coord.Broken {
		return err
	}
	var end string
	switch {
	case s.began && err == nil:
		end = "COMMIT"
	case s.began:
		end = "ROLLBACK"
	case s.coord.TxStatus == 'T' && len(s.created) > 0 && (err != nil || s.Plan.Kind != planner.DeclareCursor):
		// A cursor's temporary tables stay until its transaction ends
		// (ON COMMIT DROP).
		end = "DROP TABLE IF EXISTS " + strings.Join(s.created, ", ")
	}
	if end != "" {
		if cerr := exec(s.coord, end); err == nil {
			err = cerr
		}
	}
	if s.Scratch != nil && s.Release != nil && s.Plan.Kind != planner.DeclareCursor {
		s.Release(s.coord)
		s.coord = nil
	}
	return err
}

func (s *Statement) bind(idx []int, formats []int16) *pgproto3.Bind {
	return planner.BindOf(s.Params, idx, formats)
}

func (s *Statement) oids(idx []int) []uint32 { return planner.OIDsOf(s.Params, idx) }

// pull fills one temporary table from its sources.
func (s *Statement) pull(p planner.Pull, srcs []planner.PullSource) error {
	clusters := make([]string, len(srcs))
	for i, src := range srcs {
		clusters[i] = src.Cluster
	}
	keep, err := s.create(p, clusters)
	if err != nil {
		return err
	}
	// The temporary table has every column of the table, in its order (so
	// RowDescription's column numbers are the table's); the columns the
	// statement does not read stay NULL.
	temp := "pg_temp." + p.Temp
	if keep != nil {
		temp += " (" + strings.Join(keep, ", ") + ")"
	}
	for _, src := range srcs {
		src.SQL = project(src.SQL, keep)
		if src.Cluster == s.im.Coordinator && s.local {
			err = s.insertLocal(temp, src)
		} else {
			err = s.copyFrom(temp, p.Table, src)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// create makes a pull's temporary table, with the table's columns typed
// as the first cluster's catalog names them, and returns quoted the
// columns Pull.Columns names, which alone are pulled (at least one; nil:
// all). The other clusters must describe the rows with the same types
// (merge.SameColumns): the binary COPY would read one type as another.
func (s *Statement) create(p planner.Pull, clusters []string) ([]string, error) {
	src, err := s.conn(clusters[0])
	if err != nil {
		return nil, err
	}
	cols, names, desc, err := s.describe(src, p)
	if err != nil {
		return nil, err
	}
	for i, c := range clusters[1:] {
		if c == clusters[0] || slices.Contains(clusters[1:i+1], c) {
			continue
		}
		other, err := s.conn(c)
		if err != nil {
			return nil, err
		}
		od, err := DescribeRows(other, &pgproto3.Parse{Query: p.SQL, ParameterOIDs: s.oids(p.Params)})
		if err != nil {
			return nil, err
		}
		if err := merge.SameColumns(desc, clusters[0], od, c); err != nil {
			return nil, err
		}
	}
	var keep []string
	if p.Columns != nil && len(cols) > 0 {
		var kept []string
		for i, n := range names {
			if containsName(p.Columns, n) {
				kept, keep = append(kept, cols[i]), append(keep, pgwire.QuoteIdent(n))
			}
		}
		if len(kept) == 0 {
			kept, keep = cols[:1], []string{pgwire.QuoteIdent(names[0])}
		}
		if len(kept) == len(cols) {
			keep = nil
		}
	}
	if err := exec(s.coord, "CREATE TEMP TABLE "+p.Temp+" ("+strings.Join(cols, ", ")+") ON COMMIT DROP"); err != nil {
		return nil, err
	}
	s.created = append(s.created, "pg_temp."+p.Temp)
	return keep, nil
}

func containsName(sorted []string, n string) bool {
	i := sort.SearchStrings(sorted, n)
	return i < len(sorted) && sorted[i] == n
}

// project is a pull's statement reading only the columns keep (nil: sql
// itself, every column).
func project(sql string, keep []string) string {
	if keep == nil {
		return sql
	}
	return "SELECT " + strings.Join(keep, ", ") + " FROM (" + sql + ") sg_pull"
}

// describe returns the column definitions of a pull's rows, as the
// source cluster's catalog names their types and collations, the
// columns' names and the source's RowDescription.
func (s *Statement) describe(src *backend.Conn, p planner.Pull) ([]string, []string, *pgproto3.RowDescription, error) {
	desc, err := DescribeRows(src, &pgproto3.Parse{Query: p.SQL, ParameterOIDs: s.oids(p.Params)})
	if err != nil {
		return nil, nil, nil, err
	}
	if len(desc.Fields) == 0 {
		return nil, nil, desc, nil
	}
	var t, m, r, k []string
	for _, f := range desc.Fields {
		t = append(t, strconv.FormatUint(uint64(f.DataTypeOID), 10))
		m = append(m, strconv.FormatInt(int64(f.TypeModifier), 10))
		r = append(r, strconv.FormatUint(uint64(f.TableOID), 10))
		k = append(k, strconv.FormatUint(uint64(f.TableAttributeNumber), 10))
	}
	arr := func(xs []string, typ string) string { return "'{" + strings.Join(xs, ",") + "}'::" + typ }
	q := `SELECT pg_catalog.format_type(x.t, x.m), (SELECT ' COLLATE ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.collname)
   FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation JOIN pg_catalog.pg_namespace n ON n.oid = c.collnamespace
   WHERE a.attrelid = x.r AND a.attnum = x.k AND a.attcollation NOT IN (0, 100))
 FROM unnest(` + arr(t, "oid[]") + `, ` + arr(m, "int4[]") + `, ` + arr(r, "oid[]") + `, ` + arr(k, "int2[]") + `) WITH ORDINALITY AS x(t, m, r, k, i) ORDER BY x.i`
	rows, err := src.Query(q)
	if err != nil {
		return nil, nil, nil, pgwire.Annotate(err, src.Cluster())
	}
	if len(rows) != len(desc.Fields) {
		return nil, nil, nil, sqlerr.New(sqlerr.InternalError, "cluster %s named %d types for %d columns", src.Cluster(), len(rows), len(desc.Fields))
	}
	cols, names := make([]string, len(rows)), make([]string, len(rows))
	for i, row := range rows {
		names[i] = string(desc.Fields[i].Name)
		cols[i] = pgwire.QuoteIdent(names[i]) + " " + string(row[0]) + string(row[1])
	}
	return cols, names, desc, nil
}

// insertLocal fills the temporary table from the coordinator's own
// cluster, stopping one row beyond the row limit.
func (s *Statement) insertLocal(temp string, p planner.PullSource) error {
	q := "INSERT INTO " + temp + " " + p.SQL
	if s.Limits.MaxRows > 0 {
		q = "INSERT INTO " + temp + " SELECT * FROM (" + p.SQL + ") sg_pull LIMIT " + strconv.FormatInt(s.Limits.MaxRows-s.rows+1, 10)
	}
	b := planner.BindArg(s.Params, p.Params, nil, p.Arg)
	send(s.coord, &pgproto3.Parse{Query: q, ParameterOIDs: s.oids(p.Params)}, b, &pgproto3.Execute{}, &pgproto3.Sync{})
	var n int64
	err := read(s.coord, func(m pgwire.RawMessage) error {
		if m.Type == 'C' {
			_, n, _ = pgwire.SplitTag(m.Body)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.rows += n
	if s.Limits.MaxRows > 0 && s.rows > s.Limits.MaxRows {
		return s.overLimit("max_rows", s.Limits.MaxRows, "rows")
	}
	return nil
}

var copyHeader = append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)

// copyFrom streams one cluster's rows of a pull (of table) into the
// temporary table.
func (s *Statement) copyFrom(temp, table string, p planner.PullSource) error {
	src, err := s.conn(p.Cluster)
	if err != nil {
		return err
	}
	send(src, &pgproto3.Parse{Query: p.SQL, ParameterOIDs: s.oids(p.Params)}, planner.BindArg(s.Params, p.Params, []int16{1}, p.Arg), &pgproto3.Execute{}, &pgproto3.Sync{})
	// COPY on the coordinator, up to its CopyInResponse.
	send(s.coord, &pgproto3.Query{String: "COPY " + temp + " FROM STDIN (FORMAT binary)"})
	var copyErr error
	for inCopy := false; !inCopy; {
		m, err := s.coord.Read()
		if err != nil {
			_ = drain(src)
			return pgwire.ConnLost(s.coord.Cluster(), err)
		}
		switch m.Type {
		case 'G':
			inCopy = true
		case 'E':
			copyErr = pgwire.NewBackendError(m.Body, s.coord.Cluster(), nil)
		case 'Z':
			s.coord.Observe(m)
			_ = drain(src)
			if copyErr == nil {
				copyErr = sqlerr.New(sqlerr.InternalError, "cluster %s did not start COPY", s.coord.Cluster())
			}
			return copyErr
		}
	}
	_ = s.coord.SendRaw('d', copyHeader)
	var fail error
	unflushed := 0
	err = read(src, func(m pgwire.RawMessage) error {
		if m.Type != 'D' || fail != nil {
			return nil
		}
		s.rows++
		s.bytes += int64(len(m.Body))
		switch {
		case s.Limits.MaxRows > 0 && s.rows > s.Limits.MaxRows:
			fail = s.overLimit("max_rows", s.Limits.MaxRows, "rows")
		case s.Limits.MaxBytes > 0 && s.bytes > s.Limits.MaxBytes:
			fail = s.overLimit("max_bytes", s.Limits.MaxBytes, "bytes")
		}
		if fail != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = src.Cancel(ctx)
			cancel()
			return nil
		}
		if err := s.coord.SendRaw('d', m.Body); err != nil {
			fail = pgwire.ConnLost(s.coord.Cluster(), err)
			return nil
		}
		if unflushed += len(m.Body); unflushed > 64*1024 {
			unflushed = 0
			if err := s.coord.Flush(); err != nil {
				fail = pgwire.ConnLost(s.coord.Cluster(), err)
			}
		}
		return nil
	})
	if fail != nil {
		err = fail // the source's cancel error is ours
	}
	if err != nil {
		send(s.coord, &pgproto3.CopyFail{Message: "shardgate: pull of " + table + " failed"})
		_ = drain(s.coord)
		return err
	}
	_ = s.coord.SendRaw('d', []byte{0xff, 0xff})
	send(s.coord, &pgproto3.CopyDone{})
	return read(s.coord, func(pgwire.RawMessage) error { return nil })
}

func (s *Statement) overLimit(key string, limit int64, what string) error {
	return sqlerr.New("54000",
		"intermediate results exceed proxy.intermediate.%s (%d %s)", key, limit, what).
		WithDetail("The statement pulls %s to the coordinator: %s.", what, s.im.Cause).
		WithHint("Add conditions that select fewer rows, or raise proxy.intermediate.%s.", key)
}

// final runs the statement on the coordinator and relays its answer; a
// cursor is declared there over it.
func (s *Statement) final() (string, error) {
	q := s.im.SQL
	if s.Plan.Kind == planner.DeclareCursor {
		q = s.Plan.Cursor.Declare(q)
	}
	return s.relay(s.coord, &pgproto3.Parse{Query: q, ParameterOIDs: s.oids(nil)}, s.bind(nil, s.Formats))
}

// Coordinator is the coordinator's connection once the statement ran (a
// cursor it declared lives there).
func (s *Statement) Coordinator() *backend.Conn { return s.coord }

// tempTag numbers the statements that keep their temporary tables to the
// end of the transaction (cursors), whose tables get names of their own.
var tempTag atomic.Int64

var tempName = regexp.MustCompile(`pg_temp\.` + planner.IntermediateTempPrefix + `[0-9]+\b`)

// renameTemps is im with its temporary tables named _sg_pull_N_cTAG.
func renameTemps(im *planner.Intermediate, tag int64) *planner.Intermediate {
	suffix := "_c" + strconv.FormatInt(tag, 10)
	c := *im
	c.Pulls = append([]planner.Pull(nil), im.Pulls...)
	for i := range c.Pulls {
		c.Pulls[i].Temp += suffix
	}
	c.SQL = tempName.ReplaceAllString(im.SQL, "${0}"+suffix)
	return &c
}

// Described returns the parameter types and RowDescription (in Formats)
// of the plan's statement for Describe (extended protocol): the temporary
// tables are created empty, the coordinator describes the statement, and
// they go.
func (s *Statement) Described() (*pgproto3.ParameterDescription, *pgproto3.RowDescription, error) {
	if s.Plan.Kind == planner.Copy {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "COPY across the clusters of a sharded group through the extended query protocol is not supported by shardgate").
			WithHint("Send the COPY as a simple Query, as psql, libpq's PQexec and pgx's CopyFrom do.")
	}
	if po, ok := s.Plan.Root.(*planner.Pullout); ok {
		s.Plan = po.Orig // the same columns and parameters
	}
	if err := s.open(false); err != nil {
		return nil, nil, s.close(err)
	}
	for _, p := range s.im.Pulls {
		if _, err := s.create(p, p.Clusters); err != nil {
			return nil, nil, s.close(err)
		}
	}
	oids, rd, err := describeStatement(s.coord, s.im.SQL, s.oids(nil))
	pd := &pgproto3.ParameterDescription{ParameterOIDs: oids}
	if rd != nil {
		ApplyFormats(rd, s.Formats)
	}
	return pd, rd, s.close(err)
}

// send writes messages to b and flushes; a lost connection shows in the
// next read.
func send(b *backend.Conn, msgs ...pgwire.Encodable) {
	for _, m := range msgs {
		if b.Send(m) != nil {
			return
		}
	}
	_ = b.Flush()
}

// exec runs one simple statement on b.
func exec(b *backend.Conn, sql string) error {
	send(b, &pgproto3.Query{String: sql})
	return read(b, func(pgwire.RawMessage) error { return nil })
}

// read reads b's answer up to ReadyForQuery (merge.ReadAnswer).
func read(b *backend.Conn, fn func(pgwire.RawMessage) error) error {
	return merge.ReadAnswer(b, nil, fn)
}

// DescribeRows parses a statement (parse) on b as its unnamed statement
// and returns the columns b describes it with; a statement that returns
// no rows is an error.
func DescribeRows(b *backend.Conn, parse *pgproto3.Parse) (*pgproto3.RowDescription, error) {
	send(b, parse, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
	var desc *pgproto3.RowDescription
	err := read(b, func(m pgwire.RawMessage) error {
		if m.Type == 'T' {
			var d pgproto3.RowDescription
			if err := d.Decode(m.Body); err != nil {
				return err
			}
			desc = pgwire.CopyRowDescription(&d)
		}
		return nil
	})
	if err == nil && desc == nil {
		err = sqlerr.New(sqlerr.InternalError, "cluster %s describes %s as returning no rows", b.Cluster(), parse.Query)
	}
	return desc, err
}

// Send writes messages to b and flushes (a lost connection shows in the
// next Read); Read reads b's answer up to ReadyForQuery, handing every
// message but errors, ParameterStatus and ReadyForQuery to fn, and returns
// the first error the backend reported.
func Send(b *backend.Conn, msgs ...pgwire.Encodable) { send(b, msgs...) }

// Read: see Send.
func Read(b *backend.Conn, fn func(pgwire.RawMessage) error) error { return read(b, fn) }

// drain reads b's answer up to ReadyForQuery, ignoring it.
func drain(b *backend.Conn) error { return read(b, func(pgwire.RawMessage) error { return nil }) }

// ApplyFormats sets the format codes of a statement's RowDescription to a
// portal's result formats (none: text; one: for all).
func ApplyFormats(rd *pgproto3.RowDescription, formats []int16) {
	for i := range rd.Fields {
		rd.Fields[i].Format = planner.FormatCode(formats, i)
	}
}
