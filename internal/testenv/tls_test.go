package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A cluster of Options.TLS serves TLS with a certificate of the Env's CA:
// verify-full against Env.CAFile connects over TLS, plain connections
// still work, and the other clusters serve no TLS.
func TestClustersOverTLS(t *testing.T) {
	env := ForTest(t, Options{N: 2, TLS: []int{0}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if env.CAFile == "" || !env.Clusters[0].TLS() || env.Clusters[1].TLS() {
		t.Fatalf("CA %q, TLS %t %t", env.CAFile, env.Clusters[0].TLS(), env.Clusters[1].TLS())
	}
	c, err := pgx.Connect(ctx, env.Clusters[0].TLSDSN("", "verify-full"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var ssl bool
	if err := c.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Fatalf("verify-full session: ssl %t, %v", ssl, err)
	}
	plain, err := pgx.Connect(ctx, env.Clusters[0].DSN(""))
	if err != nil {
		t.Fatalf("plain connection to a TLS cluster: %v", err)
	}
	plain.Close(ctx)
	if _, err := pgx.Connect(ctx, strings.Replace(env.Clusters[1].DSN(""), "sslmode=disable", "sslmode=require", 1)); err == nil {
		t.Fatal("a cluster outside Options.TLS accepted TLS")
	}
}
