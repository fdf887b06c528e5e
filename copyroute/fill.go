package copyroute

import (
	"encoding/binary"
	"strconv"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Filling a column from a sequence (planner.CopyFill): the COPY the
// clusters run lists the column last; each row of the client's data gets
// one drawn value appended (text and csv: a delimiter and the number
// before the line end; binary: one more field), exactly as INSERT draws
// one value per row. When the filled column is part of the shard key, the
// row is routed by the drawn value.

// Binary type OIDs a filled column may have.
const (
	oidInt8 = 20
	oidInt2 = 21
	oidInt4 = 23
)

// fillLayout appends the filled column to the key columns when it is one
// (*keyCols without it first) and, for binary, checks its type.
func (run *copyIn) fillLayout(keyCols *[]string, types map[string]uint32) error {
	f := run.ci.Fill
	if f == nil {
		return nil
	}
	var ks []string
	for _, k := range *keyCols {
		if k == f.Column {
			run.fillKey = true
		} else {
			ks = append(ks, k)
		}
	}
	if run.fillKey {
		ks = append(ks, f.Column)
	}
	*keyCols = ks
	if run.ci.Options.Format == planner.CopyBinary {
		run.fillType = types[f.Column]
		if run.fillType != oidInt8 && run.fillType != oidInt4 && run.fillType != oidInt2 {
			return sqlerr.New(sqlerr.FeatureNotSupported, "binary COPY into %s cannot fill column \"%s\" of type oid %d from sequence %s",
				run.ci.Table.Name, f.Column, run.fillType, f.Sequence).
				WithHint("Give the column's values in the COPY, or use FORMAT text or csv.")
		}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// draw is the next value of the filled column (0 without one); a filled
// key column gets it as its key value.
func (run *copyIn) draw() (int64, error) {
	f := run.ci.Fill
	if f == nil {
		return 0, nil
	}
	if run.seqs == nil {
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "COPY needs values of sequence %s, which only a running proxy draws", f.Sequence)
	}
	vs, err := run.seqs.Next(f.Sequence, 1)
	if err != nil {
		return 0, err
	}
	if len(vs) != 1 {
		return 0, sqlerr.New(sqlerr.InternalError, "sequence %s gave %d values for 1", f.Sequence, len(vs))
	}
	if run.fillKey {
		run.keyVals[len(run.keyVals)-1] = keyexpr.Text(strconv.FormatInt(vs[0], 10))
	}
	run.drawn = vs[0]
	return vs[0], nil
}

// appendRow appends a row's data to buf, with the filled column's value
// v when there is one.
func (run *copyIn) appendRow(buf, data []byte, v int64) []byte {
	if run.ci.Fill == nil {
		return append(buf, data...)
	}
	if run.fillType != 0 { // binary: field count + 1, then the field
		n := binary.BigEndian.Uint16(data)
		buf = binary.BigEndian.AppendUint16(buf, n+1)
		buf = append(buf, data[2:]...)
		switch run.fillType {
		case oidInt8:
			buf = binary.BigEndian.AppendUint32(buf, 8)
			return binary.BigEndian.AppendUint64(buf, uint64(v))
		case oidInt4:
			buf = binary.BigEndian.AppendUint32(buf, 4)
			return binary.BigEndian.AppendUint32(buf, uint32(v))
		}
		buf = binary.BigEndian.AppendUint32(buf, 2)
		return binary.BigEndian.AppendUint16(buf, uint16(v))
	}
	end := len(data)
	for end > 0 && (data[end-1] == '\n' || data[end-1] == '\r') && len(data)-end < 2 {
		end--
	}
	delim := run.ci.Options.Delimiter[0]
	buf = append(buf, data[:end]...)
	buf = append(buf, delim)
	buf = strconv.AppendInt(buf, v, 10)
	return append(buf, data[end:]...)
}
