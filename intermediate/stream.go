package intermediate

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// firstUserOID is Postgres's FirstNormalObjectId: types below it are
// built in, with the same OID and binary format on every cluster.
const firstUserOID = 16384

// Stream executes the plan as Run does, but hands the coordinator's rows
// to the caller instead of a client, as they come: start gets the
// statement's RowDescription, with the format of each column (binary for
// built-in types, text for others) and, for the others, their type names
// as the coordinator's catalog writes them ("" for built-in types); each
// gets every row (its values are the caller's). An error of start or
// each stops the statement (its query on the coordinator is cancelled).
func (s *Statement) Stream(start func(desc *pgproto3.RowDescription, typeNames []string) error, each func(vals [][]byte) error) error {
	if err := s.open(true); err != nil {
		return s.close(err)
	}
	for i, p := range s.im.Pulls {
		if err := s.pull(p, s.sources[i]); err != nil {
			return s.close(err)
		}
	}
	return s.close(s.stream(start, each))
}

func (s *Statement) stream(start func(*pgproto3.RowDescription, []string) error, each func([][]byte) error) error {
	parse := &pgproto3.Parse{Query: s.im.SQL, ParameterOIDs: s.oids(nil)}
	desc, err := DescribeRows(s.coord, parse)
	if err != nil {
		return err
	}
	formats := make([]int16, len(desc.Fields))
	names := make([]string, len(desc.Fields))
	var oids, mods []string
	var user []int
	for i, f := range desc.Fields {
		if f.DataTypeOID < firstUserOID {
			formats[i] = 1
			continue
		}
		user = append(user, i)
		oids = append(oids, strconv.FormatUint(uint64(f.DataTypeOID), 10))
		mods = append(mods, strconv.FormatInt(int64(f.TypeModifier), 10))
	}
	if len(user) > 0 {
		rows, err := s.coord.Query(`SELECT pg_catalog.format_type(x.t, x.m) FROM unnest('{` + strings.Join(oids, ",") +
			`}'::oid[], '{` + strings.Join(mods, ",") + `}'::int4[]) WITH ORDINALITY AS x(t, m, i) ORDER BY x.i`)
		if err != nil {
			return pgwire.Annotate(err, s.coord.Cluster())
		}
		if len(rows) != len(user) {
			return sqlerr.New(sqlerr.InternalError, "cluster %s named %d types for %d columns", s.coord.Cluster(), len(rows), len(user))
		}
		for j, i := range user {
			names[i] = string(rows[j][0])
		}
	}
	for i := range desc.Fields {
		desc.Fields[i].Format = formats[i]
	}
	if err := start(desc, names); err != nil {
		return err
	}
	// The catalog query replaced the unnamed statement: parse it again.
	send(s.coord, parse, s.bind(nil, formats), &pgproto3.Execute{}, &pgproto3.Sync{})
	var fail error
	err = read(s.coord, func(m pgwire.RawMessage) error {
		if m.Type != 'D' || fail != nil {
			return nil
		}
		vals, err := pgwire.ParseDataRow(m.Body)
		if err == nil {
			err = each(vals)
		}
		if err != nil {
			fail = err
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.coord.Cancel(ctx)
			cancel()
		}
		return nil
	})
	if fail != nil {
		return fail
	}
	return err
}

// relay runs a statement on b and relays its answer to the client.
func (s *Statement) relay(b *backend.Conn, parse *pgproto3.Parse, bind *pgproto3.Bind) (string, error) {
	msgs := []pgwire.Encodable{parse, bind}
	if s.Describe {
		msgs = append(msgs, &pgproto3.Describe{ObjectType: 'P'})
	}
	send(b, append(msgs, &pgproto3.Execute{}, &pgproto3.Sync{})...)
	var tag string
	err := read(b, func(m pgwire.RawMessage) error {
		switch m.Type {
		case 'T', 'D', 'H', 'd', 'c': // rows, or COPY (...) TO STDOUT's data
			s.Client.SendRaw(m.Type, m.Body)
		case 'C':
			tag = string(strings.TrimRight(string(m.Body), "\x00"))
		case 'N':
			s.Client.SendRaw(m.Type, m.Body)
		}
		return nil
	})
	return tag, err
}
