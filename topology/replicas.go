package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Replica is a streaming standby of a cluster (clusters.NAME.replicas):
// sessions whose shardgate.target is replica or prefer_replica read
// from it.
type Replica struct {
	DSN string
	// Zone is a free-form label shown by SHOW SERVERS (not used to choose).
	Zone string
	// Priority orders the standbys: reads go to the eligible standbys of
	// the lowest priority value (default 0), the least busy of them first.
	Priority int
	Pos      Position
}

// MaxLag bounds how far behind its primary a standby may be and still
// serve reads (clusters.NAME.max_lag): by time, by bytes of WAL, or
// neither (zero).
type MaxLag struct {
	Time  time.Duration
	Bytes int64
}

// String is max_lag as the file writes it ("" for none).
func (m MaxLag) String() string {
	switch {
	case m.Time > 0:
		return m.Time.String()
	case m.Bytes > 0:
		return strconv.FormatInt(m.Bytes, 10) + "B"
	}
	return ""
}

// Read targets: where the reads of a session go (shardgate.target,
// proxy.reads.target, proxy.auth.users.NAME.target).
const (
	TargetPrimary       = "primary"
	TargetReplica       = "replica"
	TargetPreferReplica = "prefer_replica"
)

// ReadsConfig is proxy.reads.
type ReadsConfig struct {
	// Target is the default shardgate.target of every session
	// (TargetPrimary unless set).
	Target string
	// ReadOnlyTransactions is where a transaction declared READ ONLY
	// (BEGIN READ ONLY, START TRANSACTION READ ONLY, SET TRANSACTION READ
	// ONLY) of a session whose target is primary goes (TargetPrimary
	// unless set: the declaration changes nothing).
	ReadOnlyTransactions string
}

// replicas reads a cluster's replicas: a list of DSNs or of mappings
// {dsn:, zone:, priority:}.
func (d *decoder) replicas(f field, c *Cluster, pf field, hasPF bool) {
	items, ok := d.list(f.val, "replicas")
	if !ok {
		return
	}
	seen := map[string]int{}
	for i, it := range items {
		what := fmt.Sprintf("cluster %q replica %d", c.Name, i+1)
		r := Replica{Pos: pos(it)}
		dsnNode := it
		if it.Kind == yaml.MappingNode {
			fs, ok := d.fields(it, "replica", "dsn", "zone", "priority")
			if !ok {
				continue
			}
			df, ok := d.required(fs, it, "dsn", what)
			if !ok {
				continue
			}
			dsnNode = df.val
			if zf, ok := fs["zone"]; ok {
				r.Zone, _ = d.str(zf.val, "zone")
			}
			if pf, ok := fs["priority"]; ok {
				if v, ok := d.integer(pf.val, "priority"); ok {
					if v < 0 || v > 1000 {
						d.errorf(pf.val, "priority: must be between 0 and 1000, not %d", v)
					} else {
						r.Priority = int(v)
					}
				}
			}
		}
		dsn, ok := d.dsn(dsnNode, what, pf, hasPF)
		if !ok {
			continue
		}
		loc := location(dsn)
		if loc == location(c.DSN) {
			d.errorf(dsnNode, "%s: %s is the cluster's own dsn; a replica is another server", what, loc)
			continue
		}
		if line, dup := seen[loc]; dup {
			d.errorf(dsnNode, "%s: %s is listed twice (first at line %d)", what, loc, line)
			continue
		}
		seen[loc] = dsnNode.Line
		r.DSN = dsn
		c.Replicas = append(c.Replicas, r)
	}
}

// maxLag reads max_lag: a duration ("500ms", "10s") or a size of WAL
// ("16MB", "1048576", "64kB").
func (d *decoder) maxLag(f field, c *Cluster) {
	s, ok := d.str(f.val, "max_lag")
	if !ok {
		return
	}
	m, err := ParseMaxLag(s)
	if err != nil {
		d.errorf(f.val, "max_lag: %v", err)
		return
	}
	c.MaxLag = m
}

// DefaultFailoverBuffer is a cluster's failover_buffer when the file
// does not set one.
const DefaultFailoverBuffer = 10 * time.Second

// failoverBuffer reads failover_buffer: a positive duration, no more
// than a minute, allowed on a cluster with replicas only.
func (d *decoder) failoverBuffer(fs map[string]field, c *Cluster) {
	f, ok := fs["failover_buffer"]
	if !ok {
		if len(c.Replicas) > 0 {
			c.FailoverBuffer = DefaultFailoverBuffer
		}
		return
	}
	s, ok := d.str(f.val, "failover_buffer")
	if !ok {
		return
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		d.errorf(f.val, "failover_buffer: invalid duration %q (such as 10s or 500ms)", s)
	case v <= 0 || v > time.Minute:
		d.errorf(f.val, "failover_buffer: %s must be positive and at most 1m", v)
	case len(c.Replicas) == 0:
		d.errorf(f.val, "failover_buffer: cluster %q has no replicas to fail over to", c.Name)
	default:
		c.FailoverBuffer = v
	}
}

// ParseMaxLag reads a max_lag value: a positive Go duration or a
// positive number of bytes, optionally with a unit B, kB, MB or GB
// (powers of 1024, as Postgres's memory units).
func ParseMaxLag(s string) (MaxLag, error) {
	s = strings.TrimSpace(s)
	if v, err := time.ParseDuration(s); err == nil {
		if v <= 0 {
			return MaxLag{}, fmt.Errorf("%q must be positive", s)
		}
		return MaxLag{Time: v}, nil
	}
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return MaxLag{}, fmt.Errorf("invalid value %q (a duration such as 5s or 500ms, or a WAL size such as 16MB)", s)
	}
	return MaxLag{Bytes: v * mult}, nil
}

// target reads a read target (shardgate.target's values).
func (d *decoder) target(n *yaml.Node, dst *string) {
	d.targetAs(n, "target", dst)
}

// readOnlyTarget reads read_only_transactions (shardgate.target's values).
func (d *decoder) readOnlyTarget(n *yaml.Node, dst *string) {
	d.targetAs(n, "read_only_transactions", dst)
}

func (d *decoder) targetAs(n *yaml.Node, what string, dst *string) {
	if s, ok := d.oneOf(n, what, TargetPrimary, TargetReplica, TargetPreferReplica); ok {
		*dst = s
	}
}
