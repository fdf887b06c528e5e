package pgvalue

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The codecs are checked against a real backend: one throwaway cluster
// for the package.
func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 1}, nil)
}

// backendConn connects to the package's cluster.
func backendConn(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := testenv.Shared(t).Clusters[0].Conn(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// sqlstate is the SQLSTATE of a backend error, "" for any other error.
func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
