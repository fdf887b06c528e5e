package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
	"github.com/shardgate/shardgate/workflows"
)

func serveCmd() *cobra.Command {
	var topoFile, listen, metrics, logFormat, logLevel string
	var runWorkflows, profiles bool
	var workflowPoll time.Duration
	cmd := &cobra.Command{
		Use:   "serve --topology FILE",
		Short: "Serve the Postgres protocol over the clusters of a topology",
		Long: `serve loads and validates the topology file, listens for Postgres
clients and routes their statements to the clusters. The file is watched
(and SIGHUP reloads it): a valid edit applies to new statements, an edit
that would route statements away from their rows is refused and logged.
SIGTERM or SIGINT drains: idle sessions end at once, open transactions
get proxy.timeouts.shutdown to finish, and a second signal rolls them back.
With --workflows it also runs, in the background, the workflows recorded
in the main group that no other process runs (docs/workflows.md).`,
		Example: `  shardgate serve --topology topology.yaml
  shardgate serve --topology topology.yaml --listen 0.0.0.0:6432 --metrics 127.0.0.1:9187`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topoFile == "" {
				return fmt.Errorf("--topology is required")
			}
			log, err := newLogger(logFormat, logLevel)
			if err != nil {
				return err
			}
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			srv, ln, err := startServer(ctx, log, topoFile, listen)
			if err != nil {
				return err
			}
			if metrics != "" {
				addr, err := serveMetrics(metrics, srv, profiles)
				if err != nil {
					return err
				}
				log.Info("serving metrics", "url", "http://"+addr+"/metrics")
			}
			if runWorkflows {
				if err := startWorkflows(ctx, log, topoFile, workflowPoll); err != nil {
					return err
				}
			}
			log.Info("shardgate listening", "addr", ln.Addr().String(), "topology", topoFile)
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case sig := <-sigs:
				drain(log, srv, sig, sigs)
				return nil
			case err := <-errc:
				return err
			}
		},
	}
	cmd.Flags().StringVar(&topoFile, "topology", "", "topology YAML file")
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on (overrides proxy.listen; default 127.0.0.1:6432)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text (key=value) or json")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "lowest level logged: debug (adds client connections opening and closing), info, warn or error")
	cmd.Flags().BoolVar(&runWorkflows, "workflows", false, "run the workflows recorded in the main group in the background (one process per workflow at a time)")
	cmd.Flags().DurationVar(&workflowPoll, "workflow-poll", 5*time.Second, "with --workflows, how often to look for workflows to run")
	cmd.Flags().StringVar(&metrics, "metrics", "", "address for Prometheus metrics, e.g. 127.0.0.1:9187")
	cmd.Flags().BoolVar(&profiles, "pprof", false, "also serve Go profiles under /debug/pprof/ on the --metrics address (off by default: they expose the process's memory and stacks)")
	return cmd
}

// startWorkflows runs workflows.Background over the main group of the
// topology file until ctx ends.
func startWorkflows(ctx context.Context, log *slog.Logger, topoFile string, every time.Duration) error {
	t, err := topology.Load(topoFile)
	if err != nil {
		return err
	}
	store, err := workflows.OpenStore(ctx, t.Cluster(t.Main().Cluster).DSN)
	if err != nil {
		return err
	}
	go func() {
		defer store.Close()
		workflows.Background(ctx, store, every, func(format string, args ...any) {
			log.Info(fmt.Sprintf(format, args...), "component", "workflows")
		})
	}()
	return nil
}

// drain shuts the server down after the first SIGTERM or SIGINT: new
// connections are refused, idle sessions end at once with 57P01, open
// transactions get proxy.timeouts.shutdown to finish; a second signal
// rolls back the ones still open at once.
func drain(log *slog.Logger, srv *proxy.Server, sig os.Signal, sigs <-chan os.Signal) {
	timeout := srv.ShutdownTimeout()
	ctx, cancel := context.WithCancel(context.Background())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	}
	defer cancel()
	log.Info("shutting down: draining sessions", "signal", sig.String(), "timeout", timeout)
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("second signal: rolling back open transactions now", "signal", sig.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("drain cut short: open transactions were rolled back", "err", err)
		return
	}
	log.Info("drained")
}

// startServer loads the topology, builds the server, starts watching the
// file (and SIGHUP) for edits, and listens.
func startServer(ctx context.Context, log *slog.Logger, topoFile, listen string) (*proxy.Server, net.Listener, error) {
	topo, err := topology.Load(topoFile)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range topo.Warnings {
		log.Warn(w.String())
	}
	cfg, err := proxyConfig(topo)
	if err != nil {
		return nil, nil, err
	}
	cfg.Logger = log
	cfg.TopologyFile = topoFile
	cfg.Gate = routestate.NewGate()
	var fol *routestate.Follower
	cfg.Reload = func(t *topology.Topology) error { return fol.SetFile(t) } // the admin console's RELOAD
	if listen != "" {
		cfg.Listen = listen
	}
	srv, err := proxy.NewServer(cfg, topo)
	if err != nil {
		return nil, nil, err
	}
	// Connections to the shards a switch moves tables to are opened when
	// the proxy starts holding their writes, not when it releases them.
	cfg.Gate.OnArm(func(r *routestate.BufferRequest) { srv.WarmClusters(r.Clusters) })
	// Writes maintain a backfilling index at once: its lookup table must
	// exist where its owner table has rows (the backfill would create it).
	if vs, err := vschema.Build(topo); err == nil {
		if err := gsi.CreateLookupTables(topo, gsi.Added(nil, vs)); err != nil {
			log.Warn("writes to the owner tables of backfilling secondary indexes fail until their lookup tables exist", "err", err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, nil, err
	}
	// The routing in force is the file overlaid with main's latest routing
	// revision, followed as new ones are committed (package routestate).
	fol, err = routestate.Follow(ctx, topo.Cluster(topo.Main().Cluster).DSN, ln.Addr().String(), topo, cfg.Gate, srv.Reload, log)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	first := true
	w, err := topology.Watch(ctx, topoFile, func(t *topology.Topology) {
		if first {
			// Watch hands over the file it just loaded; the server has it.
			first = false
			return
		}
		// The server logs each change (and each refused one) itself.
		if err := fol.SetFile(t); err != nil {
			var refused *topology.RefusedError
			if errors.As(err, &refused) {
				log.Error("topology reload refused; keeping the old one until the file is fixed (a restart would load it unchecked)", "file", topoFile, "refused_changes", len(refused.Changes))
			} else {
				log.Error("topology reload refused; keeping the old one", "file", topoFile, "err", err)
			}
			return
		}
		log.Info("topology reloaded", "file", topoFile)
	}, func(err error) {
		log.Error("topology edit refused; keeping the old one", "err", err)
	})
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				w.Reload()
			}
		}
	}()
	return srv, ln, nil
}

// proxyConfig turns the topology's proxy section into the server's config.
func proxyConfig(t *topology.Topology) (proxy.Config, error) {
	p := t.Proxy
	cfg := proxy.Config{
		Listen:         p.Listen,
		AuthMethod:     auth.Method(p.Auth.Method),
		Users:          p.Auth.AuthUsers(),
		AuthQuery:      p.Auth.Query,
		Identity:       proxy.Identity(p.Auth.Identity),
		UserSize:       p.Pool.UserSize,
		Database:       p.Database,
		AuthTimeout:    p.Timeouts.Auth,
		PoolMode:       proxy.PoolMode(p.Pool.Mode),
		PoolSize:       p.Pool.Size,
		MaxWait:        p.Pool.MaxWait,
		IdleTimeout:    p.Pool.IdleTimeout,
		ConnectTimeout: p.Timeouts.Connect,
		QueryTimeout:   p.Timeouts.Query,
		Commit:         proxy.CommitMode(p.Commit),
		Limits:         p.Limits,
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:6432"
	}
	if p.TLS != nil {
		tc, err := p.TLS.Load()
		if err != nil {
			return cfg, err
		}
		cfg.TLS = tc
		cfg.TLSRequired = p.TLS.Required
	}
	return cfg, nil
}

// serveMetrics serves Prometheus metrics on addr, and pprof with
// profiles, and returns the address it listens on (addr may name port 0).
func serveMetrics(addr string, srv *proxy.Server, profiles bool) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(ln, metricsMux(srv, profiles)) }()
	return ln.Addr().String(), nil
}

// metricsMux is what the --metrics address serves: /metrics, /healthz
// (the process is up: 200 "ok"), /readyz (200 when ready, else 503; a JSON
// body with each cluster's state and what is not ready), and the Go
// profiles of the running proxy when profiles (--pprof) is set — they
// show its memory and stacks, so they are off unless asked for.
func metricsMux(srv *proxy.Server, profiles bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(srv.Metrics().Gatherer(), promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := srv.Readiness()
		w.Header().Set("Content-Type", "application/json")
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	if profiles {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// newLogger is the server's structured logger on stderr, in format text
// or json, from level (debug, info, warn, error) up.
func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}
