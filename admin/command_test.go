package admin

import (
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

func TestParseSwitchover(t *testing.T) {
	for _, c := range []struct {
		text, cluster, host, opt string
	}{
		{"SWITCHOVER pg1 TO 127.0.0.1:5433", "pg1", "127.0.0.1:5433", ""},
		{"switchover pg1 to db1-standby:5432 wait promotion", "pg1", "db1-standby:5432", "WAIT PROMOTION"},
	} {
		cmd, err := parse(c.text)
		if err != nil || cmd.verb != "SWITCHOVER" || cmd.arg != c.cluster || cmd.target != c.host || cmd.opt != c.opt {
			t.Errorf("%q: %+v, %v", c.text, cmd, err)
		}
	}
	for _, text := range []string{
		"SWITCHOVER pg1 TO 127.0.0.1:5433 WAIT",
		"SWITCHOVER pg1 TO 127.0.0.1:5433 PROMOTION WAIT",
		"SWITCHOVER pg1 TO 127.0.0.1:5433 WAIT PROMOTION NOW",
		"SWITCHOVER pg1 127.0.0.1:5433 WAIT PROMOTION",
	} {
		if _, err := parse(text); sqlerr.Code(err) != "42601" {
			t.Errorf("%q: want 42601, got %v", text, err)
		}
	}
}
