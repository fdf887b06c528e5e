package copyroute

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgcopy"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// flushBytes is how much data a cluster's buffer collects before it is
// sent.
const flushBytes = 64 * 1024

// Client is the session's side of a COPY FROM STDIN: where the client's
// data comes from and where the proxy's answers and the clusters' notices
// and parameter changes go.
type Client interface {
	// Receive reads the client's next message (CopyData, CopyDone,
	// CopyFail; Flush and Sync are ignored). An error means the client
	// connection is lost.
	Receive() (pgproto3.FrontendMessage, error)
	// SendRaw buffers a message for the client, as a cluster sent it (the
	// CopyInResponse, a notice).
	SendRaw(typ byte, body []byte)
	// Flush sends what is buffered for the client.
	Flush() error
	// ParameterStatus passes on a parameter a cluster reported.
	ParameterStatus(*pgproto3.ParameterStatus)
}

// Entries receives, for COPY into a table with global secondary indexes
// (planner.CopyIn.Indexes), each routed row's key and indexed values as
// text (nil: NULL), in the order of the indexes; gsi.CopyEntries writes
// them once the rows are copied.
type Entries interface {
	Add(key string, values []*string)
}

// copyIn is one COPY FROM STDIN across clusters.
type copyIn struct {
	client  Client
	ci      *planner.CopyIn
	targets []planner.Target
	conns   []*backend.Conn
	ended   []bool // the cluster has left COPY mode (error or done)
	bufs    [][]byte
	lines   []pgcopy.LineMap
	// shardConn maps a shard's index in the group to its connection.
	shardConn []int

	scan     *pgcopy.Scanner
	keyNames []string // the key fields' column names, as the index reads them
	keyTypes []uint32 // binary: their type OIDs
	keyVals  []keyexpr.Value
	env      func(string) (keyexpr.Value, bool)
	entries  Entries
	idxTypes []uint32 // binary: the indexed columns' type OIDs

	// seqs draws the values of ci.Fill (fill.go); fillKey: the filled
	// column is the last of keyNames; fillType: its type (binary).
	seqs     planner.SequenceSource
	fillKey  bool
	fillType uint32
	// drawn is the filled column's value of the row being routed;
	// idxFilled marks, per indexed column in the order the indexes list
	// them, the one the fill gives (not a field of the scanner).
	drawn     int64
	idxFilled []bool
}

// In runs COPY FROM STDIN (sql, the planned statement ci) into a member
// or reference table on conns, one per target, and returns the row count
// for the command tag. clientEncoding is the session's client_encoding,
// used when the statement names no ENCODING. The client gets one
// CopyInResponse; In reads its data through client until CopyDone or
// CopyFail. On error every cluster has left COPY mode and is ready again
// (or its connection is broken).
//
// entries, for a table with indexes, gets every row's entry values.
// A column ci.Fill names gets a value of its sequence from seqs for each
// row, added as the COPY's last column (the clusters run ci.Fill.SQL).
func In(ci *planner.CopyIn, sql, clientEncoding string, targets []planner.Target, conns []*backend.Conn, client Client, entries Entries, seqs planner.SequenceSource) (int64, error) {
	if ci.Fill != nil {
		sql = ci.Fill.SQL
	}
	run := &copyIn{client: client, ci: ci, targets: targets, conns: conns, entries: entries, seqs: seqs,
		ended: make([]bool, len(conns)), bufs: make([][]byte, len(conns)), lines: make([]pgcopy.LineMap, len(conns))}
	var cfg pgcopy.Config
	if !ci.Reference() {
		var err error
		if cfg, err = run.layout(); err != nil {
			return 0, err
		}
		enc := ci.Options.Encoding
		if enc == "" {
			enc = clientEncoding
		}
		textKey := ci.Group.Index.Type == vschema.Text || ci.Group.Index.Type == vschema.Varchar
		for _, si := range ci.Indexes {
			textKey = textKey || si.Type == vschema.Text || si.Type == vschema.Varchar
		}
		if err := pgcopy.CheckEncoding(enc, textKey, ci.Table.Name); err != nil {
			return 0, err
		}
	}
	inResp, err := run.start(sql)
	if err != nil {
		return 0, err
	}
	if !ci.Reference() {
		if err := run.checkConfig(&cfg); err != nil {
			return 0, run.abort(err, "shardgate: "+pgwire.ErrMessage(err))
		}
		run.scan = pgcopy.NewScanner(cfg)
	}
	client.SendRaw('G', inResp)
	if err := client.Flush(); err != nil {
		return 0, run.abort(sqlerr.New("08006", "client connection lost during COPY"), "client connection lost during COPY")
	}
	return run.stream()
}

// layout finds the positions (and, for binary, the types) of the key
// columns among the COPY's columns, asking the first cluster for the
// table's columns when the statement lists none.
func (run *copyIn) layout() (pgcopy.Config, error) {
	ci := run.ci
	opts := &ci.Options
	cfg := pgcopy.Config{Format: scanFormat(opts.Format), Null: opts.Null, Default: opts.Default, HasDefault: opts.HasDefault, Header: opts.Header}
	cols := ci.Columns
	types := map[string]uint32{}
	if cols == nil || opts.Format == planner.CopyBinary {
		rows, err := run.conns[0].Query(`SELECT a.attname, a.atttypid FROM pg_catalog.pg_attribute a
WHERE a.attrelid = pg_catalog.to_regclass(` + pgwire.QuoteLiteral(ci.Relation) + `) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attnum`)
		if err != nil {
			return cfg, pgwire.Annotate(err, run.conns[0].Cluster())
		}
		var all []string
		for _, r := range rows {
			oid, _ := strconv.ParseUint(string(r[1]), 10, 32)
			types[string(r[0])] = uint32(oid)
			all = append(all, string(r[0]))
		}
		if len(rows) == 0 {
			// No such table (or no columns): COPY itself will say so.
			return cfg, nil
		}
		if cols == nil {
			cols = all
		}
	}
	cfg.Columns = len(cols)
	keyCols := ci.KeyColumns
	if err := run.fillLayout(&keyCols, types); err != nil {
		return cfg, err
	}
	run.keyNames = keyCols
	run.keyVals = make([]keyexpr.Value, len(keyCols))
	run.env = func(col string) (keyexpr.Value, bool) {
		for i, c := range run.keyNames {
			if c == col {
				return run.keyVals[i], true
			}
		}
		return keyexpr.Null(), false
	}
	for _, k := range keyCols[:len(keyCols)-b2i(run.fillKey)] {
		pos := -1
		for i, c := range cols {
			if c == k {
				pos = i
				break
			}
		}
		if pos < 0 {
			return cfg, sqlerr.New(sqlerr.UndefinedColumn, "shard key column \"%s\" of table \"%s\" is not among the columns of the COPY", k, ci.Table.Name)
		}
		cfg.KeyPos = append(cfg.KeyPos, pos)
		cfg.Names = append(cfg.Names, k)
		cfg.ForceNotNull = append(cfg.ForceNotNull, opts.HasForceNotNull(k))
		cfg.ForceNull = append(cfg.ForceNull, opts.HasForceNull(k))
		if opts.Format == planner.CopyBinary {
			t := types[k]
			if !pgcopy.BinaryKeyType(t) {
				return cfg, sqlerr.New(sqlerr.FeatureNotSupported,
					"binary COPY into %s: shardgate cannot read shard key column \"%s\" of type oid %d", ci.Table.Name, k, t).
					WithHint("Use FORMAT text or csv, or a key column of type bigint, integer, smallint, text, varchar or uuid.")
			}
			run.keyTypes = append(run.keyTypes, t)
		}
	}
	if err := run.indexFields(&cfg, cols, types); err != nil {
		return cfg, err
	}
	g := ci.Group
	run.shardConn = make([]int, len(g.Shards))
	for i, s := range g.Shards {
		run.shardConn[i] = -1
		for j, t := range run.targets {
			if t.Cluster == s.Cluster {
				run.shardConn[i] = j
			}
		}
	}
	return cfg, nil
}

// scanFormat is the scanner's name for a COPY format.
func scanFormat(f planner.CopyFormat) pgcopy.Format {
	switch f {
	case planner.CopyCSV:
		return pgcopy.CSV
	case planner.CopyBinary:
		return pgcopy.Binary
	}
	return pgcopy.Text
}

// checkConfig fills the single-byte options in cfg. The clusters have
// accepted the statement, so the options are valid; this only guards the
// scanner.
func (run *copyIn) checkConfig(cfg *pgcopy.Config) error {
	if cfg.KeyPos == nil && len(run.ci.KeyColumns) > b2i(run.fillKey) {
		return sqlerr.New(sqlerr.UndefinedTable, "shardgate could not read the columns of table %s", run.ci.Relation)
	}
	o := &run.ci.Options
	if o.Format == planner.CopyBinary {
		return nil
	}
	one := func(name, v string) (byte, error) {
		if len(v) != 1 {
			return 0, sqlerr.New(sqlerr.FeatureNotSupported, "COPY %s must be a single one-byte character", name)
		}
		return v[0], nil
	}
	var err error
	if cfg.Delim, err = one("delimiter", o.Delimiter); err != nil {
		return err
	}
	if o.Format == planner.CopyCSV {
		if cfg.Quote, err = one("quote", o.Quote); err != nil {
			return err
		}
		if cfg.Escape, err = one("escape", o.Escape); err != nil {
			return err
		}
	}
	return nil
}

// start sends the COPY to every cluster and waits until each is ready for
// data. It returns the first cluster's CopyInResponse for the client.
func (run *copyIn) start(sql string) ([]byte, error) {
	for _, b := range run.conns {
		if err := b.Send(&pgproto3.Query{String: sql}); err != nil {
			return nil, pgwire.ConnLost(b.Cluster(), err)
		}
		if err := b.Flush(); err != nil {
			return nil, pgwire.ConnLost(b.Cluster(), err)
		}
	}
	var first error
	var resp []byte
	for i, b := range run.conns {
		for {
			m, err := b.Read()
			if err != nil {
				run.ended[i] = true
				if first == nil {
					first = pgwire.ConnLost(b.Cluster(), err)
				}
				break
			}
			if m.Type == 'G' {
				if resp == nil {
					resp = append([]byte(nil), m.Body...)
				}
				break
			}
			if m.Type == 'E' && first == nil {
				first = pgwire.NewBackendError(m.Body, b.Cluster(), run.targets[i].Shards)
			}
			if m.Type == 'Z' {
				run.ended[i] = true
				if len(m.Body) > 0 {
					b.TxStatus = m.Body[0]
				}
				if first == nil {
					first = sqlerr.New(sqlerr.ProtocolViolation, "cluster %s did not start COPY", b.Cluster())
				}
				break
			}
			run.side(b, m)
		}
	}
	if first != nil {
		return nil, run.abort(first, "shardgate: COPY failed on another cluster")
	}
	return resp, nil
}

// side handles a message a backend sends during COPY that is not about
// COPY itself: notices go to the client, parameter changes are recorded.
func (run *copyIn) side(b *backend.Conn, m pgwire.RawMessage) {
	switch m.Type {
	case 'N':
		run.client.SendRaw(m.Type, m.Body)
	case 'S':
		var ps pgproto3.ParameterStatus
		if ps.Decode(m.Body) == nil {
			b.Params[ps.Name] = ps.Value
			run.client.ParameterStatus(&ps)
		}
	}
}

// abort ends the COPY on every cluster still copying (CopyFail) and waits
// for each to be ready again; it returns err.
func (run *copyIn) abort(err error, reason string) error {
	for i, b := range run.conns {
		if run.ended[i] || b.Broken {
			continue
		}
		_ = b.Send(&pgproto3.CopyFail{Message: reason})
		_ = b.Flush()
	}
	for i, b := range run.conns {
		if run.ended[i] || b.Broken {
			continue
		}
		run.ended[i] = true
		_ = b.DrainUntilReady(nil)
	}
	return err
}

// stream reads the client's COPY data until CopyDone or CopyFail.
func (run *copyIn) stream() (int64, error) {
	for {
		msg, err := run.client.Receive()
		if err != nil {
			return 0, run.abort(sqlerr.New("08006", "client connection lost during COPY"), "client connection lost during COPY")
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := run.data(m.Data, false); err != nil {
				return 0, run.abort(err, "shardgate: "+pgwire.ErrMessage(err))
			}
		case *pgproto3.CopyDone:
			if err := run.data(nil, true); err != nil {
				return 0, run.abort(err, "shardgate: "+pgwire.ErrMessage(err))
			}
			return run.finish()
		case *pgproto3.CopyFail:
			return 0, run.clientFail(m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
			// Ignored during COPY IN, as the server does.
		default:
			return 0, run.abort(sqlerr.New("08P01", "unexpected message type %T during COPY from stdin", msg), "shardgate: unexpected message from the client")
		}
	}
}

// data routes one CopyData message (final: the stream has ended).
func (run *copyIn) data(p []byte, final bool) error {
	if run.scan == nil {
		// A reference table: every byte to every cluster.
		for i := range run.conns {
			run.bufs[i] = append(run.bufs[i], p...)
			if len(run.bufs[i]) >= flushBytes {
				if err := run.flushConn(i); err != nil {
					return err
				}
			}
		}
		return nil
	}
	run.scan.Feed(p)
	for {
		row, err := run.scan.Next(final)
		if err != nil {
			return pgcopy.RowError(run.ci.Table.Name, err)
		}
		if row == nil {
			return nil
		}
		switch row.Kind {
		case pgcopy.RowHeader, pgcopy.RowTrailer:
			for i := range run.conns {
				run.bufs[i] = append(run.bufs[i], row.Data...)
				if row.Kind == pgcopy.RowHeader && row.Line > 0 {
					run.lines[i].Add(row.Lines, row.Line)
				}
			}
			continue
		}
		val, err := run.draw()
		if err != nil {
			return err
		}
		i, err := run.route(row)
		if err != nil {
			return pgcopy.RowError(run.ci.Table.Name, err)
		}
		run.bufs[i] = run.appendRow(run.bufs[i], row.Data, val)
		run.lines[i].Add(row.Lines, row.Line)
		if len(run.bufs[i]) >= flushBytes {
			if err := run.flushConn(i); err != nil {
				return err
			}
		}
	}
}

// route computes a row's key and returns the connection of its shard.
func (run *copyIn) route(row *pgcopy.Row) (int, error) {
	// The fields are the key's (but a filled one, drawn already), then
	// the indexed columns' (entries.go).
	for i, f := range row.Fields[:len(run.keyNames)-b2i(run.fillKey)] {
		col := run.keyNames[i]
		switch {
		case f.Default:
			return 0, &pgcopy.FieldError{Line: row.Line, Column: col,
				Err: sqlerr.New(sqlerr.FeatureNotSupported, "shard key column \"%s\" of table \"%s\" cannot take its default in COPY", col, run.ci.Table.Name)}
		case f.Null:
			return 0, &pgcopy.FieldError{Line: row.Line, Column: col,
				Err: sqlerr.New(sqlerr.NotNullViolation, "null value in shard key column \"%s\" of table \"%s\"", col, run.ci.Table.Name).
					WithDetail("A row without a shard key has no shard to live on.")}
		}
		v, err := keyexpr.Text(string(f.Value)), error(nil) // text and csv
		if run.keyTypes != nil {
			v, err = pgcopy.KeyValue(run.keyTypes[i], f.Value)
		}
		if err != nil {
			return 0, &pgcopy.FieldError{Line: row.Line, Column: col, Value: f.Value, Err: err}
		}
		run.keyVals[i] = v
	}
	key, err := run.ci.Table.KeyFromColumns(run.env)
	if err != nil {
		col := ""
		var val []byte
		if len(row.Fields) == 1 {
			col, val = run.keyNames[0], row.Fields[0].Value
		}
		return 0, &pgcopy.FieldError{Line: row.Line, Column: col, Value: val, Err: err}
	}
	s, err := run.ci.Group.ShardFor(key)
	if err != nil {
		return 0, &pgcopy.FieldError{Line: row.Line, Err: err}
	}
	i := run.shardConn[s.Index]
	if i < 0 {
		return 0, sqlerr.New(sqlerr.InternalError, "shard %s has no COPY connection", s.Name)
	}
	if len(run.ci.Indexes) > 0 {
		return i, run.entry(row)
	}
	return i, nil
}

// flushConn sends cluster i's buffer and looks, without waiting, for an
// early error from it.
func (run *copyIn) flushConn(i int) error {
	b := run.conns[i]
	if run.ended[i] {
		run.bufs[i] = run.bufs[i][:0]
		return nil
	}
	if len(run.bufs[i]) > 0 {
		if err := b.SendRaw('d', run.bufs[i]); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		run.bufs[i] = run.bufs[i][:0]
	}
	if err := b.Flush(); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	return run.poll(i)
}

// poll reads what cluster i has sent during the COPY, without blocking:
// notices, or the error that ended its COPY.
func (run *copyIn) poll(i int) error {
	b := run.conns[i]
	for b.Pending() {
		m, err := b.Read()
		if err != nil {
			run.ended[i] = true
			return pgwire.ConnLost(b.Cluster(), err)
		}
		switch m.Type {
		case 'E':
			err := run.backendError(i, m.Body)
			run.ended[i] = true
			_ = b.DrainUntilReady(nil)
			return err
		case 'Z':
			run.ended[i] = true
			if len(m.Body) > 0 {
				b.TxStatus = m.Body[0]
			}
			return sqlerr.New(sqlerr.ProtocolViolation, "cluster %s left COPY unexpectedly", b.Cluster())
		default:
			run.side(b, m)
		}
	}
	return nil
}

// finish ends the COPY on every cluster and returns the total row count.
func (run *copyIn) finish() (int64, error) {
	for i := range run.conns {
		if err := run.flushConn(i); err != nil {
			return 0, run.abort(err, "shardgate: COPY failed on another cluster")
		}
	}
	for _, b := range run.conns {
		if err := b.Send(&pgproto3.CopyDone{}); err != nil {
			return 0, run.abort(pgwire.ConnLost(b.Cluster(), err), "shardgate: COPY failed on another cluster")
		}
		if err := b.Flush(); err != nil {
			return 0, run.abort(pgwire.ConnLost(b.Cluster(), err), "shardgate: COPY failed on another cluster")
		}
	}
	var first error
	var total int64
	for i := range run.conns {
		run.ended[i] = true
		n, err := run.readResult(i)
		if err != nil && first == nil {
			first = err
		}
		if i == 0 || !run.ci.Reference() {
			total += n // a reference table's copies all count the same rows
		}
	}
	if first != nil {
		return 0, first
	}
	return total, nil
}

// readResult reads cluster i's answer to CopyDone or CopyFail up to
// ReadyForQuery: its row count, or its error.
func (run *copyIn) readResult(i int) (int64, error) {
	b := run.conns[i]
	var n int64
	var first error
	for {
		m, err := b.Read()
		if err != nil {
			return 0, pgwire.ConnLost(b.Cluster(), err)
		}
		switch m.Type {
		case 'C':
			_, n, _ = pgwire.SplitTag(m.Body)
		case 'E':
			if first == nil {
				first = run.backendError(i, m.Body)
			}
		case 'Z':
			if len(m.Body) > 0 {
				b.TxStatus = m.Body[0]
			}
			return n, first
		default:
			run.side(b, m)
		}
	}
}

// clientFail passes the client's CopyFail to every cluster; their error
// ("COPY from stdin failed: ...") is the answer.
func (run *copyIn) clientFail(msg string) error {
	for i, b := range run.conns {
		if run.ended[i] {
			continue
		}
		_ = b.Send(&pgproto3.CopyFail{Message: msg})
		_ = b.Flush()
	}
	var first error
	for i := range run.conns {
		if run.ended[i] {
			continue
		}
		run.ended[i] = true
		if _, err := run.readResult(i); err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		first = sqlerr.New(sqlerr.QueryCanceled, "COPY from stdin failed: %s", msg)
	}
	return first
}

// backendError turns a cluster's error during COPY into the client's:
// the line in its context, and in front of its message, is the line of
// the client's stream.
func (run *copyIn) backendError(i int, body []byte) error {
	err := pgwire.NewBackendError(body, run.conns[i].Cluster(), run.targets[i].Shards)
	if be, ok := err.(*pgwire.BackendError); ok {
		var m *pgcopy.LineMap // a reference table: every cluster got every line
		if run.scan != nil {
			m = &run.lines[i]
		}
		pgcopy.FixLine(&be.Resp, m, run.conns[i].Cluster())
	}
	return err
}
