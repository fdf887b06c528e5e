package proxy

import (
	"context"
	"fmt"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/pgwire"
)

// createRoles creates login roles (with no privileges) on every cluster
// of e, if they are missing.
func createRoles(e *testenv.Env, roles ...string) error {
	for _, c := range e.Clusters {
		for _, r := range roles {
			sql := fmt.Sprintf(`DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = %s) THEN CREATE ROLE %s LOGIN; END IF; END$$`,
				pgwire.QuoteLiteral(r), pgwire.QuoteIdent(r))
			if err := c.Exec(context.Background(), "", sql); err != nil {
				return err
			}
		}
	}
	return nil
}
