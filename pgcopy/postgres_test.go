package pgcopy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestCopyScannerAgainstPostgres needs a real backend: one throwaway
// cluster for the package.
func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 1}, nil)
}

func csvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// TestCopyScannerAgainstPostgres feeds random text and csv data to a real
// Postgres and to the scanner: wherever Postgres accepts the data, the
// scanner must find the same rows with the same value in the key field.
func TestCopyScannerAgainstPostgres(t *testing.T) {
	ctx := context.Background()
	c, err := testenv.Shared(t).Clusters[0].Conn(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS scan_diff; CREATE TABLE scan_diff (n serial, a text, b text, c text)"); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "b", "1", ",", "\t", "\"", "\"\"", "\\", "\\N", "\\.", "\n", "\r", "\r\n", "x\\ty", "\\x41", "\\101", "é", ";", "'", " "}
	accepted, iterations := 0, 1000
	if testing.Short() {
		iterations = 300
	}
	for iter := 0; iter < iterations; iter++ {
		format := Text
		if iter%2 == 1 {
			format = CSV
		}
		// Mostly well-formed rows of three fields, built from pieces that
		// exercise quoting, escaping and line ends.
		delim, eol := "\t", []string{"\n", "\r\n", "\r"}[rng.IntN(3)]
		if format == CSV {
			delim = ","
		}
		var b strings.Builder
		for r := rng.IntN(4) + 1; r > 0; r-- {
			for f := 0; f < 3; f++ {
				if f > 0 {
					b.WriteString(delim)
				}
				var v strings.Builder
				for i := rng.IntN(4); i > 0; i-- {
					v.WriteString(pieces[rng.IntN(len(pieces))])
				}
				if format == CSV && rng.IntN(2) == 0 {
					b.WriteString(csvQuote(v.String()))
				} else {
					b.WriteString(v.String())
				}
			}
			b.WriteString(eol)
		}
		input := b.String()
		cfg := textCfg(1)
		stmt := "COPY scan_diff (a, b, c) FROM STDIN"
		if format == CSV {
			cfg = csvCfg(1)
			stmt += " (FORMAT csv)"
		}
		if _, err := c.Exec(ctx, "TRUNCATE scan_diff"); err != nil {
			t.Fatal(err)
		}
		_, pgErr := c.PgConn().CopyFrom(ctx, strings.NewReader(input), stmt)
		rows, scanErr := scanChunks(cfg, []byte(input), nil)
		if pgErr != nil {
			var pe *pgconn.PgError
			if !errors.As(pgErr, &pe) {
				t.Fatal(pgErr)
			}
			// Where the scanner reports an error too, it names the same line.
			var de *DataError
			if errors.As(scanErr, &de) && pe.Message == de.Message && !strings.Contains(pe.Where, fmt.Sprintf("line %d", de.Line)) {
				t.Fatalf("input %q (%s): Postgres %q at %q, scanner %q at line %d", input, format, pe.Message, pe.Where, de.Message, de.Line)
			}
			continue
		}
		accepted++
		if scanErr != nil {
			t.Fatalf("input %q (%s): Postgres accepts it, the scanner says %v", input, format, scanErr)
		}
		res, err := c.Query(ctx, "SELECT coalesce(b, '<NULL>') FROM scan_diff ORDER BY n")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for res.Next() {
			var v string
			_ = res.Scan(&v)
			want = append(want, v)
		}
		var got []string
		for _, r := range rows {
			v := r.fields
			if v == "NULL" {
				v = "<NULL>"
			}
			got = append(got, v)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("input %q (%s):\nscanner  %q\npostgres %q", input, format, got, want)
		}
	}
	t.Logf("%d of %d random inputs accepted by Postgres and matched", accepted, iterations)
	if accepted < iterations/10 {
		t.Fatalf("only %d inputs accepted: the generator needs work", accepted)
	}
}
