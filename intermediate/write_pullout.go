package intermediate

import (
	"strconv"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// WriteLiteral runs a WritePullout's subquery, once the catalog says it
// reads no column of the outer statement, and returns its value as a
// typed SQL literal for wp.WriteSQL: 'v'::type, NULL::type for no row or
// a NULL, for IN an array literal of the values ('{...}'::type[]). What
// the statement cannot be written with is an error: a correlated
// subquery, more than one column or (scalar) row, more than
// MaxPulloutValues values, a float or a value the subquery returned in
// binary (0A000, or Postgres's own 42601 and 21000).
func (s *Statement) WriteLiteral(wp *planner.WritePullout) (string, error) {
	s.connOnce()
	po := &wp.Pullout
	ok, err := s.pulloutCheck(po)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "a subquery that reads a column of the statement it is in, in %s, is not supported across shards", wp.Sub.SQL)
	}
	res, err := s.runSub(po)
	switch {
	case err != nil:
		return "", err
	case res == nil:
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "the subquery %s cannot be merged across shards before the write", wp.Sub.SQL)
	case res.cols != 1:
		return "", sqlerr.New(sqlerr.SyntaxError, "subquery must return only one column")
	case !po.In && res.n > 1:
		return "", sqlerr.New("21000", "more than one row returned by a subquery used as an expression")
	case res.n > len(res.vals):
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "IN (subquery) of more than %d values before a write across shards is not supported", MaxPulloutValues)
	case res.binary || res.oid == 700 || res.oid == 701:
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "a subquery of type real or double precision (or returned in binary) before a write across shards is not supported")
	}
	b, err := s.Conn(po.CheckOn)
	if err != nil {
		return "", err
	}
	rows, err := b.Query("SELECT pg_catalog.format_type(oid, NULL), pg_catalog.format_type(NULLIF(typarray, 0), NULL) FROM pg_catalog.pg_type WHERE oid = " + strconv.FormatUint(uint64(res.oid), 10))
	if err != nil {
		return "", pgwire.Annotate(err, b.Cluster())
	}
	if len(rows) != 1 || len(rows[0]) != 2 || rows[0][0] == nil {
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "the subquery's type (oid %d) is not known on %s", res.oid, b.Cluster())
	}
	typ, arr := string(rows[0][0]), rows[0][1]
	if po.In {
		if arr == nil {
			return "", sqlerr.New(sqlerr.FeatureNotSupported, "IN (subquery) over a type without an array type is not supported")
		}
		return pgwire.QuoteLiteral(string(textArray(res.vals))) + "::" + string(arr), nil
	}
	if len(res.vals) == 0 || res.vals[0] == nil {
		return "NULL::" + typ, nil
	}
	return pgwire.QuoteLiteral(string(res.vals[0])) + "::" + typ, nil
}
