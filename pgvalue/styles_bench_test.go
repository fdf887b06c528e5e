package pgvalue

import "testing"

// The cost of reading the shards' text under each DateStyle and
// IntervalStyle (go test -bench Styled -run XXX ./pgvalue/).
func BenchmarkDecodeStyled(b *testing.B) {
	for _, c := range []struct {
		name, ds, is, tz string
		oid              uint32
		text             string
	}{
		{"timestamptz/ISO", "ISO, MDY", "postgres", "Europe/Berlin", 1184, "2026-12-01 23:44:37.214695+01"},
		{"timestamptz/SQL", "SQL, DMY", "postgres", "Europe/Berlin", 1184, "01/12/2026 23:44:37.214695 CET"},
		{"timestamptz/Postgres", "Postgres, MDY", "postgres", "America/New_York", 1184, "Tue Dec 01 17:44:37.214695 2026 EST"},
		{"date/German", "German", "postgres", "UTC", 1082, "01.12.2026"},
		{"interval/postgres", "ISO", "postgres", "UTC", 1186, "1 year 2 mons 3 days 04:05:06.789"},
		{"interval/iso_8601", "ISO", "iso_8601", "UTC", 1186, "P1Y2M3DT4H5M6.789S"},
		{"interval/sql_standard", "ISO", "sql_standard", "UTC", 1186, "+1-2 +3 +4:05:06.789"},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, _ := NewStyles(c.ds, c.is, c.tz)
			t, raw := TypeOf(c.oid), []byte(c.text)
			if _, err := t.DecodeStyled(raw, 0, st); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				t.DecodeStyled(raw, 0, st)
			}
		})
	}
}
