package pgcopy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// scanned is a scanner's output in comparable form.
type scanned struct {
	kind   RowKind
	data   string
	line   int64
	lines  int
	fields string // key fields, "|"-separated; NULL and DEFAULT spelled out
}

func (r scanned) String() string {
	return fmt.Sprintf("{%d %q line=%d lines=%d fields=%q}", r.kind, r.data, r.line, r.lines, r.fields)
}

// scanChunks feeds input cut at the given offsets and returns every row,
// then the error (if any) that stopped the scan.
func scanChunks(cfg Config, input []byte, cuts []int) ([]scanned, error) {
	s := NewScanner(cfg)
	var out []scanned
	collect := func(final bool) error {
		for {
			r, err := s.Next(final)
			if err != nil {
				return err
			}
			if r == nil {
				return nil
			}
			var fs []string
			for _, f := range r.Fields {
				switch {
				case f.Null:
					fs = append(fs, "NULL")
				case f.Default:
					fs = append(fs, "DEFAULT")
				default:
					fs = append(fs, string(f.Value))
				}
			}
			out = append(out, scanned{r.Kind, string(r.Data), r.Line, r.Lines, strings.Join(fs, "|")})
		}
	}
	prev := 0
	for _, c := range append(cuts, len(input)) {
		// Copy each piece: the scanner must not keep the caller's buffer.
		piece := append([]byte(nil), input[prev:c]...)
		s.Feed(piece)
		err := collect(false)
		for i := range piece {
			piece[i] = '#'
		}
		if err != nil {
			return out, err
		}
		prev = c
	}
	return out, collect(true)
}

func textCfg(keyPos ...int) Config {
	cfg := Config{Format: Text, Delim: '\t', Null: `\N`, KeyPos: keyPos}
	for range keyPos {
		cfg.Names = append(cfg.Names, fmt.Sprintf("c%d", len(cfg.Names)))
		cfg.ForceNotNull = append(cfg.ForceNotNull, false)
		cfg.ForceNull = append(cfg.ForceNull, false)
	}
	return cfg
}

func csvCfg(keyPos ...int) Config {
	cfg := textCfg(keyPos...)
	cfg.Format, cfg.Delim, cfg.Null, cfg.Quote, cfg.Escape = CSV, ',', "", '"', '"'
	return cfg
}

type scanCase struct {
	name  string
	cfg   Config
	input string
	want  []scanned
	err   string // substring of the error; "" for none
	line  int64  // the error's line
}

func scanCases() []scanCase {
	hdr := textCfg(1)
	hdr.Header = true
	csvHdr := csvCfg(0)
	csvHdr.Header = true
	nullNil := textCfg(0, 1)
	nullNil.Delim, nullNil.Null = '|', "nil"
	fnn := csvCfg(1)
	fnn.ForceNotNull[0] = true
	fn := csvCfg(1)
	fn.ForceNull[0] = true
	esc := csvCfg(1)
	esc.Escape = '\\'
	dflt := textCfg(0)
	dflt.Default, dflt.HasDefault = "@d", true
	semi := csvCfg(1)
	semi.Delim, semi.Quote, semi.Escape, semi.Null = ';', '\'', '\'', "NULL"
	return []scanCase{
		{name: "text rows", cfg: textCfg(1), input: "1\tabc\n2\t\\N\n", want: []scanned{
			{RowData, "1\tabc\n", 1, 1, "abc"}, {RowData, "2\t\\N\n", 2, 1, "NULL"}}},
		{name: "text escapes", cfg: textCfg(0, 1), input: "a\\tb\tx\\x41\\101\\n\\q\\x\\xZ\n", want: []scanned{
			{RowData, "a\\tb\tx\\x41\\101\\n\\q\\x\\xZ\n", 1, 1, "a\tb|xAA\nqxxZ"}}},
		{name: "text octal and hex lengths", cfg: textCfg(0), input: "\\0\\18\\1234\\x4142\n", want: []scanned{
			{RowData, "\\0\\18\\1234\\x4142\n", 1, 1, "\x00\x018S4A42"}}},
		{name: "text escaped delimiter and line end", cfg: textCfg(0, 1), input: "a\\\tb\tc\nd\\\ne\tf\n", want: []scanned{
			{RowData, "a\\\tb\tc\n", 1, 1, "a\tb|c"}, {RowData, "d\\\ne\tf\n", 2, 1, "d\ne|f"}}},
		{name: "text key beyond what is needed is not parsed", cfg: textCfg(0), input: "7\tbad\\\n", want: []scanned{
			{RowData, "7\tbad\\\n", 1, 1, "7"}}},
		{name: "text null is compared raw", cfg: textCfg(0, 1), input: "\\\\N\t\\N\n", want: []scanned{
			{RowData, "\\\\N\t\\N\n", 1, 1, "\\N|NULL"}}},
		{name: "text custom delimiter and null", cfg: nullNil, input: "nil|x\\|y\n", want: []scanned{
			{RowData, "nil|x\\|y\n", 1, 1, "NULL|x|y"}}},
		{name: "text default marker", cfg: dflt, input: "@d\t1\n@dx\t2\n", want: []scanned{
			{RowData, "@d\t1\n", 1, 1, "DEFAULT"}, {RowData, "@dx\t2\n", 2, 1, "@dx"}}},
		{name: "text empty line is one empty field", cfg: textCfg(0), input: "\n\n", want: []scanned{
			{RowData, "\n", 1, 1, ""}, {RowData, "\n", 2, 1, ""}}},
		{name: "text missing key field", cfg: textCfg(2), input: "1\t2\t3\n1\t2\n", err: `missing data for column "c0"`, line: 2,
			want: []scanned{{RowData, "1\t2\t3\n", 1, 1, "3"}}},
		{name: "text crlf", cfg: textCfg(0), input: "1\tx\r\n2\ty\r\n", want: []scanned{
			{RowData, "1\tx\r\n", 1, 1, "1"}, {RowData, "2\ty\r\n", 2, 1, "2"}}},
		{name: "text cr", cfg: textCfg(1), input: "1\tx\r2\ty\r", want: []scanned{
			{RowData, "1\tx\r", 1, 1, "x"}, {RowData, "2\ty\r", 2, 1, "y"}}},
		{name: "text cr then lf is an error", cfg: textCfg(0), input: "1\r2\n", err: "literal newline found in data", line: 2,
			want: []scanned{{RowData, "1\r", 1, 1, "1"}}},
		{name: "text lf then cr is an error", cfg: textCfg(0), input: "1\n2\r3\n", err: "literal carriage return found in data", line: 2,
			want: []scanned{{RowData, "1\n", 1, 1, "1"}}},
		{name: "text crlf then bare cr is an error", cfg: textCfg(0), input: "1\r\n2\r3\r\n", err: "literal carriage return found in data", line: 2,
			want: []scanned{{RowData, "1\r\n", 1, 1, "1"}}},
		{name: "text last line without line end", cfg: textCfg(1), input: "1\tx\n2\ty", want: []scanned{
			{RowData, "1\tx\n", 1, 1, "x"}, {RowData, "2\ty", 2, 1, "y"}}},
		{name: "text end marker", cfg: textCfg(0), input: "1\n\\.\nignored\tx\n", want: []scanned{
			{RowData, "1\n", 1, 1, "1"}}},
		{name: "text end marker after data on its line", cfg: textCfg(0), input: "1\n2\\.\n3\n", want: []scanned{
			{RowData, "1\n", 1, 1, "1"}, {RowData, "2", 2, 1, "2"}}},
		{name: "text escaped backslash before a dot is data", cfg: textCfg(0), input: "\\\\.\n", want: []scanned{
			{RowData, "\\\\.\n", 1, 1, "\\."}}},
		{name: "text end marker corrupt", cfg: textCfg(0), input: "1\n\\.x\n", err: "end-of-copy marker corrupt", line: 2,
			want: []scanned{{RowData, "1\n", 1, 1, "1"}}},
		{name: "text end marker at the very end", cfg: textCfg(0), input: "1\n\\.", err: "end-of-copy marker corrupt", line: 2,
			want: []scanned{{RowData, "1\n", 1, 1, "1"}}},
		{name: "text end marker with another line end style", cfg: textCfg(0), input: "1\r\n\\.\n", err: "end-of-copy marker does not match previous newline style", line: 2,
			want: []scanned{{RowData, "1\r\n", 1, 1, "1"}}},
		{name: "text end marker crlf", cfg: textCfg(0), input: "1\r\n\\.\r\n", want: []scanned{{RowData, "1\r\n", 1, 1, "1"}}},
		{name: "text header", cfg: hdr, input: "a\tb\n1\tx\n", want: []scanned{
			{RowHeader, "a\tb\n", 1, 1, ""}, {RowData, "1\tx\n", 2, 1, "x"}}},
		{name: "text header only", cfg: hdr, input: "a\tb\n", want: []scanned{{RowHeader, "a\tb\n", 1, 1, ""}}},
		{name: "text header then marker", cfg: hdr, input: "\\.\n", want: nil},

		{name: "csv quotes", cfg: csvCfg(1), input: "1,\"a,b\"\n2,\"a\"\"b\"\n3,x\"y\"z\n", want: []scanned{
			{RowData, "1,\"a,b\"\n", 1, 1, "a,b"}, {RowData, "2,\"a\"\"b\"\n", 2, 1, "a\"b"}, {RowData, "3,x\"y\"z\n", 3, 1, "xyz"}}},
		{name: "csv quoted line breaks count as lines", cfg: csvCfg(1), input: "0,y\n1,\"a\nb\nc\"\n2,x\n", want: []scanned{
			{RowData, "0,y\n", 1, 1, "y"}, {RowData, "1,\"a\nb\nc\"\n", 4, 3, "a\nb\nc"}, {RowData, "2,x\n", 5, 1, "x"}}},
		// Until the first line end is seen, Postgres counts quoted \r, not \n.
		{name: "csv quoted line breaks in the first line", cfg: csvCfg(1), input: "1,\"a\nb\nc\"\n2,x\n", want: []scanned{
			{RowData, "1,\"a\nb\nc\"\n", 1, 1, "a\nb\nc"}, {RowData, "2,x\n", 2, 1, "x"}}},
		{name: "csv quoted crlf", cfg: csvCfg(0), input: "\"a\r\nb\",1\r\nc,2\r\n", want: []scanned{
			{RowData, "\"a\r\nb\",1\r\n", 2, 2, "a\r\nb"}, {RowData, "c,2\r\n", 3, 1, "c"}}},
		{name: "csv null and empty string", cfg: csvCfg(0, 1), input: ",\"\"\n", want: []scanned{
			{RowData, ",\"\"\n", 1, 1, "NULL|"}}},
		{name: "csv force not null", cfg: fnn, input: "1,\n", want: []scanned{{RowData, "1,\n", 1, 1, ""}}},
		{name: "csv force null", cfg: fn, input: "1,\"\"\n2,\n", want: []scanned{
			{RowData, "1,\"\"\n", 1, 1, "NULL"}, {RowData, "2,\n", 2, 1, "NULL"}}},
		{name: "csv escape", cfg: esc, input: "1,\"a\\\"b\\\\c\\d\"\n", want: []scanned{
			{RowData, "1,\"a\\\"b\\\\c\\d\"\n", 1, 1, "a\"b\\c\\d"}}},
		{name: "csv options", cfg: semi, input: "1;'x;''y'\n2;NULL\n3;'NULL'\n", want: []scanned{
			{RowData, "1;'x;''y'\n", 1, 1, "x;'y"}, {RowData, "2;NULL\n", 2, 1, "NULL"}, {RowData, "3;'NULL'\n", 3, 1, "NULL"}}},
		{name: "csv header", cfg: csvHdr, input: "id,\"na\nme\"\n5,x\n", want: []scanned{
			{RowHeader, "id,\"na\nme\"\n", 1, 1, ""}, {RowData, "5,x\n", 2, 1, "5"}}},
		{name: "csv unterminated quote", cfg: csvCfg(1), input: "1,\"abc\n", err: "unterminated CSV quoted field", line: 1},
		{name: "csv unterminated quote at the end", cfg: csvCfg(0), input: "x\n\"abc", err: "unterminated CSV quoted field", line: 2,
			want: []scanned{{RowData, "x\n", 1, 1, "x"}}},
		{name: "csv end marker", cfg: csvCfg(0), input: "1\n\\.\n2\n", want: []scanned{{RowData, "1\n", 1, 1, "1"}}},
		{name: "csv backslash dot is data elsewhere", cfg: csvCfg(0, 1), input: "\\.x,1\na,\\.\n", want: []scanned{
			{RowData, "\\.x,1\n", 1, 1, "\\.x|1"}, {RowData, "a,\\.\n", 2, 1, "a|\\."}}},
		{name: "csv unquoted cr", cfg: csvCfg(0), input: "1\n2\r", err: "unquoted carriage return found in data", line: 2,
			want: []scanned{{RowData, "1\n", 1, 1, "1"}}},
		{name: "csv missing field", cfg: csvCfg(1), input: "1\n", err: `missing data for column "c0"`, line: 1},
	}
}

func TestCopyScanner(t *testing.T) {
	for _, c := range scanCases() {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.input)
			got, err := scanChunks(c.cfg, in, nil)
			checkScan(t, c, got, err)
			// Every way of cutting the input in two, and byte by byte,
			// gives the same rows.
			for cut := 1; cut < len(in); cut++ {
				got2, err2 := scanChunks(c.cfg, in, []int{cut})
				if fmt.Sprint(got2, err2) != fmt.Sprint(got, err) {
					t.Fatalf("cut at %d:\n got %v %v\nwant %v %v", cut, got2, err2, got, err)
				}
			}
			var cuts []int
			for i := 1; i < len(in); i++ {
				cuts = append(cuts, i)
			}
			got3, err3 := scanChunks(c.cfg, in, cuts)
			if fmt.Sprint(got3, err3) != fmt.Sprint(got, err) {
				t.Fatalf("byte by byte:\n got %v %v\nwant %v %v", got3, err3, got, err)
			}
		})
	}
}

func checkScan(t *testing.T, c scanCase, got []scanned, err error) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(c.want) {
		t.Errorf("rows:\n got %v\nwant %v", got, c.want)
	}
	switch {
	case c.err == "" && err != nil:
		t.Errorf("unexpected error %v", err)
	case c.err != "" && err == nil:
		t.Errorf("no error, want %q", c.err)
	case c.err != "":
		de, ok := err.(*DataError)
		if !ok || !strings.Contains(de.Message, c.err) || de.Line != c.line {
			t.Errorf("error %#v, want %q at line %d", err, c.err, c.line)
		}
	}
}

// binaryStream builds a binary COPY stream of int8 and text pairs.
func binaryStream(rows [][2]any, trailer bool) []byte {
	var b bytes.Buffer
	b.Write(binarySignature)
	b.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	for _, r := range rows {
		_ = binary.Write(&b, binary.BigEndian, int16(2))
		for _, v := range r {
			switch x := v.(type) {
			case nil:
				_ = binary.Write(&b, binary.BigEndian, int32(-1))
			case int64:
				_ = binary.Write(&b, binary.BigEndian, int32(8))
				_ = binary.Write(&b, binary.BigEndian, x)
			case string:
				_ = binary.Write(&b, binary.BigEndian, int32(len(x)))
				b.WriteString(x)
			}
		}
	}
	if trailer {
		b.Write([]byte{0xff, 0xff})
	}
	return b.Bytes()
}

func TestCopyScannerBinary(t *testing.T) {
	cfg := Config{Format: Binary, KeyPos: []int{0, 1}, Names: []string{"id", "name"}, Columns: 2,
		ForceNotNull: []bool{false, false}, ForceNull: []bool{false, false}}
	stream := binaryStream([][2]any{{int64(7), "seven"}, {int64(-1), nil}}, true)
	hdr := string(stream[:19])
	row1 := string(stream[19 : 19+2+4+8+4+5])
	row2 := string(stream[19+len(row1) : len(stream)-2])
	want := []scanned{
		{RowHeader, hdr, 0, 0, ""},
		{RowData, row1, 1, 1, "\x00\x00\x00\x00\x00\x00\x00\x07|seven"},
		{RowData, row2, 2, 1, "\xff\xff\xff\xff\xff\xff\xff\xff|NULL"},
		{RowTrailer, "\xff\xff", 0, 0, ""},
	}
	cases := []scanCase{
		{name: "rows", cfg: cfg, input: string(stream), want: want},
		{name: "no trailer", cfg: cfg, input: string(stream[:len(stream)-2]), want: want[:3]},
		{name: "a stray byte at the end is the end", cfg: cfg, input: string(stream[:len(stream)-1]), want: want[:3]},
		{name: "data after the trailer", cfg: cfg, input: string(stream) + "x", want: want, err: "received copy data after EOF marker", line: 3},
		{name: "truncated tuple", cfg: cfg, input: string(stream[:19+10]), want: want[:1], err: "unexpected EOF in COPY data", line: 1},
		{name: "bad signature", cfg: cfg, input: "PGCOPY\n\xff\r\n\x01" + string(stream[11:]), err: "COPY file signature not recognized"},
		{name: "oids", cfg: cfg, input: string(stream[:11]) + "\x00\x01\x00\x00" + string(stream[15:]), err: "WITH OIDS"},
		{name: "header extension", cfg: cfg, input: string(stream[:15]) + "\x00\x00\x00\x03abc" + string(stream[19:]), want: append([]scanned{
			{RowHeader, string(stream[:15]) + "\x00\x00\x00\x03abc", 0, 0, ""}}, want[1:]...)},
		{name: "field count", cfg: cfg, input: string(binaryStream(nil, false)) + "\x00\x03", want: want[:1], err: "row field count is 3, expected 2", line: 1},
		{name: "negative field size", cfg: cfg, input: string(binaryStream(nil, false)) + "\x00\x02\xff\xff\xff\xfe", want: want[:1], err: "invalid field size", line: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.input)
			got, err := scanChunks(c.cfg, in, nil)
			if c.err != "" && c.line == 0 {
				// Header errors carry no line.
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			checkScan(t, c, got, err)
			var cuts []int
			for i := 1; i < len(in); i++ {
				cuts = append(cuts, i)
			}
			got2, err2 := scanChunks(c.cfg, in, cuts)
			if fmt.Sprint(got2, err2) != fmt.Sprint(got, err) {
				t.Fatalf("byte by byte:\n got %v %v\nwant %v %v", got2, err2, got, err)
			}
		})
	}
}

func TestLineMap(t *testing.T) {
	var m LineMap
	m.Add(1, 1) // header
	m.Add(1, 3)
	m.Add(3, 9) // a csv row over lines 7..9 of the input
	m.Add(1, 12)
	for _, c := range []struct{ shard, input int64 }{{1, 1}, {2, 3}, {5, 9}, {4, 8}, {6, 12}} {
		if got, ok := m.Lookup(c.shard); !ok || got != c.input {
			t.Errorf("lookup(%d) = %d %v, want %d", c.shard, got, ok, c.input)
		}
	}
	if _, ok := m.Lookup(7); ok {
		t.Error("lookup past the end succeeded")
	}
	var w LineMap
	for i := int64(1); i <= lineMapWindow+10; i++ {
		w.Add(1, 2*i)
	}
	if got, ok := w.Lookup(lineMapWindow + 10); !ok || got != 2*(lineMapWindow+10) {
		t.Errorf("lookup of the last row = %d %v", got, ok)
	}
	if _, ok := w.Lookup(3); ok {
		t.Error("lookup of a row before the window succeeded")
	}
}

// FuzzCopyScanner checks, on any input, that the scanner does not panic,
// that where the input is cut into messages does not change its rows or
// its error, and that the rows are the input's bytes in order.
func FuzzCopyScanner(f *testing.F) {
	for _, c := range scanCases() {
		f.Add([]byte(c.input), byte(c.cfg.Format), uint8(3))
	}
	f.Add(binaryStream([][2]any{{int64(1), "a"}, {nil, "b"}}, true), byte(Binary), uint8(5))
	f.Fuzz(func(t *testing.T, input []byte, format byte, step uint8) {
		var cfg Config
		switch format % 3 {
		case 0:
			cfg = textCfg(0, 2)
		case 1:
			cfg = csvCfg(0, 2)
			cfg.ForceNull[1] = true
		default:
			cfg = Config{Format: Binary, KeyPos: []int{0, 2}, Names: []string{"a", "c"}, Columns: 3,
				ForceNotNull: []bool{false, false}, ForceNull: []bool{false, false}}
		}
		cfg.Header = step%2 == 1
		whole, werr := scanChunks(cfg, input, nil)
		var cuts []int
		for i := int(step%16) + 1; i < len(input); i += int(step%16) + 1 {
			cuts = append(cuts, i)
		}
		pieces, perr := scanChunks(cfg, input, cuts)
		if fmt.Sprint(whole, werr) != fmt.Sprint(pieces, perr) {
			t.Fatalf("cut every %d bytes:\n got %v %v\nwant %v %v", step%16+1, pieces, perr, whole, werr)
		}
		var all []byte
		var line int64
		for _, r := range whole {
			all = append(all, r.data...)
			if r.kind == RowData {
				if r.line != line+int64(r.lines) || r.lines < 1 {
					t.Fatalf("row %v after line %d", r, line)
				}
			}
			if r.line > 0 {
				line = r.line
			}
		}
		if !bytes.HasPrefix(input, all) {
			t.Fatalf("rows are not a prefix of the input:\n%q\n%q", all, input)
		}
	})
}
