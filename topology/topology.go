package topology

import (
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/keyexpr"
)

// Version is the only topology file version this package reads.
const Version = 1

// MainGroup is the name of the unsharded group that holds sequences,
// shardgate's metadata and every table the topology does not name.
const MainGroup = "main"

// Sharding functions.
const (
	FunctionXXHash = "xxhash" // keyspace id = XXH64 of the key; shards own hex key ranges
	FunctionRange  = "range"  // shards own half-open integer ranges of the key
	FunctionModulo = "modulo" // shard = key mod number of shards
)

// Key types of a sharding or secondary index, by their canonical names.
const (
	TypeBigint   = "bigint"
	TypeInteger  = "integer"
	TypeSmallint = "smallint"
	TypeText     = "text"
	TypeVarchar  = "varchar"
	TypeUUID     = "uuid"
)

// Secondary index states.
const (
	StateBackfilling = "backfilling" // maintained on writes, not yet used for reads
	StateActive      = "active"      // maintained and used for reads
)

// Topology is a validated topology file. It is immutable once returned.
type Topology struct {
	Version  int
	Clusters []*Cluster // in file order
	Groups   []*Group   // in file order
	Proxy    ProxyConfig
	Warnings []Diagnostic // problems that did not refuse the file
	File     string       // the file name diagnostics use
	// Overrides are the parts of the routing that a routing revision
	// stored in main decided over the file (package routestate sets them
	// on the effective topology it builds); nil for a file as loaded.
	Overrides []Override
}

// Override is one part of the routing decided by a routing revision.
type Override struct {
	// Key is the part, as a path like Change.Key: "groups.G" (a group's
	// layout), "groups.G.secondary_indexes.N" (an index's state) or
	// "tables.T" (a table's group).
	Key string
	// Origin says where it comes from, e.g. "revision 3 by alice (switch workflow 1)".
	Origin string
}

// OverrideOf returns the override that covers key (key itself or a part
// of it), or nil.
func (t *Topology) OverrideOf(key string) *Override {
	for i, o := range t.Overrides {
		if key == o.Key || strings.HasPrefix(key, o.Key+".") {
			return &t.Overrides[i]
		}
	}
	return nil
}

// Cluster returns the cluster with the given name, or nil.
func (t *Topology) Cluster(name string) *Cluster {
	for _, c := range t.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Group returns the group with the given name, or nil.
func (t *Topology) Group(name string) *Group {
	for _, g := range t.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// Main returns the main group; a valid topology always has one.
func (t *Topology) Main() *Group { return t.Group(MainGroup) }

// Position is a 1-based line and column in the topology file. Columns
// count characters, as the YAML parser does.
type Position struct {
	Line, Col int
}

// Cluster is one backend Postgres database.
type Cluster struct {
	Name string
	DSN  string // a postgres:// or postgresql:// URL
	// Replicas are the cluster's streaming standbys (replicas.go), in
	// file order; MaxLag how far behind one may be and serve reads.
	Replicas []Replica
	MaxLag   MaxLag
	// FailoverBuffer is how long the cluster's statements are held while
	// it has no primary (a cluster with replicas; DefaultFailoverBuffer
	// unless failover_buffer says).
	FailoverBuffer time.Duration
	Pos            Position
}

// Group is a shard group: tables that share one sharding index (or, for
// an unsharded group, one cluster).
type Group struct {
	Name      string
	Unsharded bool
	Cluster   string   // unsharded groups: the one cluster
	Index     *Index   // sharded groups: the sharding index
	Shards    []*Shard // sharded groups, in keyspace order
	Tables    []*Table // member tables (for main: the tables named explicitly)
	Reference []QualifiedName
	Sequences []QualifiedName // main only
	// SecondaryIndexes are the group's global secondary indexes.
	SecondaryIndexes []*SecondaryIndex
	// Placement is PlacementFunction (the default) or PlacementLookup
	// (sharded groups; placement.go).
	Placement string
	// List is the group's static value list: keys placed on a cluster
	// by the file, before the directory and the function.
	List []*ListEntry
	// LookupClusters are the clusters a lookup group's directory may
	// name besides its shards' and its list's.
	LookupClusters []string
	// Directory is a lookup group's directory, as a routing revision
	// decided it (package routestate sets it on the effective topology;
	// nil for a file as loaded).
	Directory []*DirectoryEntry
	Pos       Position
}

// Table returns the member table with the given name, or nil.
func (g *Group) Table(name QualifiedName) *Table {
	for _, t := range g.Tables {
		if t.QualifiedName == name {
			return t
		}
	}
	return nil
}

// IsReference reports whether name is one of the group's reference tables.
func (g *Group) IsReference(name QualifiedName) bool { return slices.Contains(g.Reference, name) }

// Index is a sharding index: exactly one of Column and Expression is set.
type Index struct {
	Name       string        // defaults to the group's name
	Column     string        // a column index: the key column (member tables may rename it)
	Expression *keyexpr.Expr // an expression index
	Type       string        // one of the Type constants
	Function   string        // one of the Function constants
	Pos        Position
}

// Shard is one shard of a sharded group. Which fields are set depends on
// the group's function.
type Shard struct {
	// Name identifies the shard within its group: the key range for
	// xxhash ("-80", "80-c0", "c0-", "-"), "from-to" for range ("0-100",
	// "100-", "-0"), the remainder for modulo ("0", "1", ...).
	Name    string
	Cluster string
	// Start and End bound an xxhash key range [Start, End) of keyspace
	// ids, compared as byte strings: "80" stands for 0x80 followed by
	// zeros. nil Start is the beginning of the keyspace, nil End its end.
	Start, End []byte
	// From and To bound a range shard [From, To); nil is unbounded.
	From, To *int64
	// Modulo is the remainder a modulo shard owns.
	Modulo int
	Pos    Position
}

// Table is a member table of a group.
type Table struct {
	QualifiedName
	// Column is the table's own column for a column index when it differs
	// from the index column (customers.id for an index on customer_id);
	// empty means the index column.
	Column   string
	Sequence *SequenceBinding // a column filled from a main-group sequence
	// ShardKeyUpdate is what an UPDATE of the table's shard key does:
	// ShardKeyRefuse (the default for a table whose group has other member
	// tables, which may hold rows of the key) or ShardKeyMoveRow.
	ShardKeyUpdate string
	Pos            Position
}

// Values of Table.ShardKeyUpdate.
const (
	ShardKeyRefuse  = "refuse"
	ShardKeyMoveRow = "move_row"
)

// SequenceBinding fills a column of a member table from a sequence that
// lives in the main group.
type SequenceBinding struct {
	Column string
	Name   QualifiedName // listed in the main group's sequences
	Pos    Position
}

// SecondaryIndex is a global secondary index: a lookup from a non-key
// column of a member table to the shard key.
//
// The proxy keeps its entries in a lookup table named after the index, in
// the owner table's schema, sharded by the xxhash of the indexed value over
// the owner group's shards (vschema derives it; docs/topology.md describes
// it).
type SecondaryIndex struct {
	Name   string
	Table  QualifiedName // a member table of the same group
	Column string
	// Expression, instead of Column, indexes the value of an expression
	// of the table's columns (lower(email)).
	Expression *keyexpr.Expr
	// Columns, instead of Column, index several columns together (two or
	// more); ColumnTypes has the type of each (Type is then empty).
	Columns     []string
	ColumnTypes []string
	Type        string // one of the Type constants
	State       string // StateBackfilling or StateActive
	// Unique makes a duplicate value anywhere in the group a 23505.
	Unique bool
	// IgnoreNulls (the default) keeps rows whose indexed value is NULL
	// out of the index; false refuses them with 23502.
	IgnoreNulls bool
	Pos         Position
}

// Indexed is what the index indexes: its column, or its expression's
// text.
func (si *SecondaryIndex) Indexed() string {
	if si.Expression != nil {
		return si.Expression.String()
	}
	if len(si.Columns) > 0 {
		return strings.Join(si.Columns, ", ")
	}
	return si.Column
}

// Types is the index's type, or its columns' types ("text, integer").
func (si *SecondaryIndex) Types() string {
	if len(si.Columns) > 0 {
		return strings.Join(si.ColumnTypes, ", ")
	}
	return si.Type
}

// ProxyConfig is the optional proxy: section, with defaults filled in.
type ProxyConfig struct {
	Listen string // host:port, default 127.0.0.1:6432
	// Database is the database name clients connect to; empty: the
	// database of the main group's cluster DSN.
	Database string
	Auth     AuthConfig
	TLS      *TLSConfig // nil: no TLS
	Pool     PoolConfig
	Timeouts TimeoutConfig
	Commit   string // CommitTwoPhase (default) or CommitBestEffort
	Log      LogConfig
	// QueryStats is proxy.query_stats: the statistics by fingerprint SHOW
	// QUERIES reads.
	QueryStats QueryStatsConfig
	// Intermediate bounds the intermediate results of one statement (rows
	// and bytes pulled to the coordinator); 0 keeps the proxy's default.
	Intermediate IntermediateConfig
	// Limits bound the client connections and what they may make the
	// proxy hold (proxy.limits).
	Limits LimitsConfig
	// Reads says where sessions read by default (proxy.reads).
	Reads ReadsConfig
}

// LimitsConfig is proxy.limits, with defaults filled in.
type LimitsConfig struct {
	// MaxClients bounds open client connections (default 10000); one
	// more gets FATAL 53300 "too many clients", as Postgres's
	// max_connections and pgbouncer's max_client_conn.
	MaxClients int
	// MaxBufferedBytes bounds the bytes of client messages held at once
	// across all sessions (default 1 GiB): a message that would take more
	// is refused with FATAL 53200.
	MaxBufferedBytes int64
	// MaxMessageBytes bounds one client message (default 64 MiB), as
	// pgbouncer's max_packet_size: a larger one is FATAL 54000.
	MaxMessageBytes int
	// StartupBytes bounds the start-up packet (default 10000, Postgres's
	// MAX_STARTUP_PACKET_LENGTH).
	StartupBytes int
	// StartupTimeout is how long a client may take to send its start-up
	// packet, TLS negotiation included (default 5s); then it is closed.
	StartupTimeout time.Duration
}

// DefaultLimits are proxy.limits when the file does not set them.
var DefaultLimits = LimitsConfig{MaxClients: 10000, MaxBufferedBytes: 1 << 30, MaxMessageBytes: 64 << 20, StartupBytes: 10000, StartupTimeout: 5 * time.Second}

// IntermediateConfig is proxy.intermediate: max_rows and max_bytes.
type IntermediateConfig struct {
	MaxRows  int64
	MaxBytes int64
}

// LogConfig configures the proxy's logs.
type LogConfig struct {
	// SlowStatement: statements that take at least this long are logged
	// with their route; 0 (default) logs none.
	SlowStatement time.Duration
	// SampleStatements is the share of statements (0 to 1) logged at
	// info with their duration, route, shards, rows and fingerprint; 0
	// (default) logs none.
	SampleStatements float64
}

// QueryStatsConfig is proxy.query_stats.
type QueryStatsConfig struct {
	// Max is how many fingerprints the statistics keep (default
	// DefaultQueryStatsMax); 0 keeps none (statistics off).
	Max int
}

// DefaultQueryStatsMax is proxy.query_stats.max when the file does not set it.
const DefaultQueryStatsMax = 5000

// Cross-shard commit protocols.
const (
	CommitTwoPhase   = "two_phase"
	CommitBestEffort = "best_effort"
)

// Client authentication methods.
const (
	AuthTrust = "trust"
	AuthMD5   = "md5"
	AuthSCRAM = "scram-sha-256"
)

// Pool modes.
const (
	PoolTransaction = "transaction"
	PoolSession     = "session"
)

// AuthConfig says how clients authenticate to the proxy.
type AuthConfig struct {
	Method string  // AuthTrust (default), AuthMD5 or AuthSCRAM
	Users  []*User // in file order
	// Identity is who backend sessions run as: IdentityClient (each
	// client as its own role; the default with md5 and scram-sha-256) or
	// IdentityService (every client as the DSN's user; the default with
	// trust).
	Identity string
	// Query: users not listed are looked up in main's pg_authid
	// (auth_query), through the DSN's user.
	Query bool
}

// Backend identities (proxy.auth.identity).
const (
	IdentityClient  = "client"
	IdentityService = "service"
)

// User returns the user with the given name, or nil.
func (a *AuthConfig) User(name string) *User {
	for _, u := range a.Users {
		if u.Name == name {
			return u
		}
	}
	return nil
}

// AuthUsers returns the users as package auth takes them.
func (a *AuthConfig) AuthUsers() []auth.User {
	var users []auth.User
	for _, u := range a.Users {
		users = append(users, auth.User{Name: u.Name, Password: u.Password, Admin: u.Admin, ServerPassword: u.ServerPassword})
	}
	return users
}

// User is a client user of the proxy.
type User struct {
	Name string
	// Password is a plain-text password, an MD5 hash ("md5" followed by 32
	// hex digits) or a SCRAM verifier ("SCRAM-SHA-256$..."), as in
	// pg_authid.rolpassword.
	Password string
	// Admin lets the user open the admin console (database shardgate).
	Admin bool
	// ServerPassword is the password the proxy logs in to the backends
	// with as this role, when SCRAM pass-through cannot ("" if none).
	ServerPassword string
	// Target is the user's default shardgate.target ("": proxy.reads).
	Target string
	// ReadOnlyTransactions is where the user's READ ONLY transactions go
	// ("": proxy.reads.read_only_transactions).
	ReadOnlyTransactions string
	Pos                  Position
}

// PasswordKind says how a User's Password is stored.
type PasswordKind int

// Password storage kinds.
const (
	PasswordPlain PasswordKind = iota
	PasswordMD5
	PasswordSCRAM
)

// PasswordKind classifies the password the way Postgres's
// get_password_type does.
func (u *User) PasswordKind() PasswordKind { return passwordKind(u.Password) }

// TLSConfig names the proxy's certificate and key files. Relative paths
// are resolved against the topology file's directory.
type TLSConfig struct {
	Cert, Key string
	// Required refuses clients that do not negotiate TLS (28000), as a
	// pg_hba.conf of hostssl lines only.
	Required bool
}

// PoolConfig configures backend connection pools.
type PoolConfig struct {
	Mode        string        // PoolTransaction (default) or PoolSession
	Size        int           // connections per cluster (all roles together), default 10
	UserSize    int           // connections per cluster of one role; 0 = only Size
	MaxWait     time.Duration // how long a client waits for a connection, default 5s
	IdleTimeout time.Duration // close idle connections after this; 0 = never
}

// TimeoutConfig holds the proxy's timeouts; 0 means none.
type TimeoutConfig struct {
	Connect time.Duration // backend connect, default 5s
	Query   time.Duration // default statement_timeout of sessions, default none
	Auth    time.Duration // client start-up and authentication, default 10s
	// Shutdown is how long a SIGTERM lets open transactions finish before
	// they are rolled back, default 30s (0: no limit).
	Shutdown time.Duration
}
