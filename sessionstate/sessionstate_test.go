package sessionstate

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

func TestReplayOrder(t *testing.T) {
	s := Settings{"search_path": "'x'", "role": "'r'", "session_authorization": "'u'", "application_name": "'a'"}
	want := "RESET SESSION AUTHORIZATION;RESET ROLE;RESET ALL;" +
		"SET session_authorization = 'u';SET application_name = 'a';SET search_path = 'x';SET role = 'r';"
	if got := s.ReplaySQL(); got != want {
		t.Fatalf("ReplaySQL:\n got %s\nwant %s", got, want)
	}
	if got := (Settings{}).ReplaySQL(); got != "RESET SESSION AUTHORIZATION;RESET ROLE;RESET ALL;" {
		t.Fatalf("empty: %s", got)
	}
	if s.Key() == (Settings{}).Key() || (Settings{}).Key() == "" {
		t.Fatal("keys must differ and never be empty")
	}
	if s.Key() != s.Clone().Key() {
		t.Fatal("a clone has another key")
	}
}

func TestFromStartupAndCheck(t *testing.T) {
	s := FromStartup(map[string]string{"user": "u", "database": "d", "Application_Name": "it's", "options": "-c work_mem=8MB --search_path=x"})
	if len(s) != 3 || s["application_name"] != "'it''s'" || s["work_mem"] != "'8MB'" || s["search_path"] != "'x'" {
		t.Fatalf("FromStartup: %v", s)
	}
	for _, off := range []string{"off", "OFF", "of", "false", "f", "no", "0"} {
		for _, params := range []map[string]string{
			{"standard_conforming_strings": off},
			{"options": "-c standard_conforming_strings=" + off},
		} {
			err := CheckStartup(params)
			if e, ok := err.(*sqlerr.Error); !ok || e.Code != sqlerr.FeatureNotSupported {
				t.Fatalf("%v: want 0A000, got %v", params, err)
			}
		}
	}
	for _, on := range []string{"", "on", "true", "1", "yes", "o"} {
		if err := CheckStartup(map[string]string{"standard_conforming_strings": on}); err != nil {
			t.Fatalf("%q: %v", on, err)
		}
	}
}

func TestTxReplay(t *testing.T) {
	var r TxReplay
	r.Local("SET TRANSACTION READ ONLY")
	r.Savepoint("a")
	r.Local("SET LOCAL work_mem TO '1MB'")
	r.Savepoint("b")
	r.Local("SET LOCAL work_mem TO '2MB'")
	r.RollbackTo("b")
	if got, want := r.SQL("BEGIN"), "BEGIN;SET TRANSACTION READ ONLY;SAVEPOINT a;SET LOCAL work_mem TO '1MB';SAVEPOINT b;"; got != want {
		t.Fatalf("after ROLLBACK TO:\n got %s\nwant %s", got, want)
	}
	r.Local("SET CONSTRAINTS ALL DEFERRED")
	r.Release("a")
	if got, want := r.SQL("BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN ISOLATION LEVEL SERIALIZABLE;SET TRANSACTION READ ONLY;SET LOCAL work_mem TO '1MB';SET CONSTRAINTS ALL DEFERRED;"; got != want {
		t.Fatalf("after RELEASE:\n got %s\nwant %s", got, want)
	}
	r.RollbackTo("nope")
	r.Release("nope")
	r.Savepoint("Mixed Case")
	if got, want := r.SQL("BEGIN"), "BEGIN;SET TRANSACTION READ ONLY;SET LOCAL work_mem TO '1MB';SET CONSTRAINTS ALL DEFERRED;SAVEPOINT \"Mixed Case\";"; got != want {
		t.Fatalf("quoting:\n got %s\nwant %s", got, want)
	}
}

// Characteristics keeps what sets the isolation level, read-only and
// deferrable modes, in order and less what ROLLBACK TO undid; other local
// settings and savepoints are not carried to a chained transaction.
func TestTxReplayCharacteristics(t *testing.T) {
	var r TxReplay
	r.Local("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET LOCAL work_mem TO '1MB'")
	r.Savepoint("a")
	r.Local("SET LOCAL transaction_read_only TO on")
	r.Local("SET CONSTRAINTS ALL DEFERRED")
	r.Savepoint("b")
	r.Local("SET LOCAL transaction_deferrable TO on")
	r.RollbackTo("b")
	got := strings.Join(r.Characteristics(), ";")
	if want := "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;SET LOCAL transaction_read_only TO on"; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// Only a search_path that puts pg_catalog after another schema lets a
// function named without a schema be the session's own.
func TestPathChanged(t *testing.T) {
	for v, want := range map[string]bool{
		"":                        false,
		`"sg_evil", "public"`:     false,
		`pg_catalog, sg_evil`:     false,
		`"pg_catalog", "sg_evil"`: false,
		`sg_evil, pg_catalog`:     true,
		`"sg_evil", "pg_catalog"`: true,
		`'sg_evil, pg_catalog'`:   true,
	} {
		s := Settings{}
		if v != "" {
			s["search_path"] = v
		}
		if got := s.PathChanged(); got != want {
			t.Errorf("search_path %s: PathChanged %v, want %v", v, got, want)
		}
	}
}
