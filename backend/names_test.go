package backend

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// TestNextName: names count up per connection, so EvictOldest finds the
// lowest "sg" number as the oldest.
func TestNextName(t *testing.T) {
	b := &Conn{Prepared: map[string]string{}}
	if a, c := b.NextName("sg"), b.NextName("sgrow"); a != "sg1" || c != "sgrow2" {
		t.Fatalf("NextName: %q, %q", a, c)
	}
	b.Prepared["k3"], b.Prepared["k4"] = b.NextName("sg"), b.NextName("sg")
	if got := b.EvictOldest(); got != "sg3" {
		t.Fatalf("EvictOldest: %q, want sg3", got)
	}
}

// TestClusterErr: a backend error names the cluster, a broken
// connection's error is 08006, nil stays nil.
func TestClusterErr(t *testing.T) {
	b := &Conn{pool: &Pool{cluster: "pg1"}}
	if err := b.ClusterErr(nil); err != nil {
		t.Fatalf("nil: %v", err)
	}
	var be *pgwire.BackendError
	if err := b.ClusterErr(&pgconn.PgError{Code: "23505", Message: "dup"}); !errors.As(err, &be) || be.Cluster != "pg1" || sqlerr.Code(err) != "23505" {
		t.Fatalf("backend error: %#v", err)
	}
	b.Broken = true
	if err := b.ClusterErr(errors.New("EOF")); sqlerr.Code(err) != "08006" {
		t.Fatalf("broken: %v (SQLSTATE %s)", err, sqlerr.Code(err))
	}
}
