package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/gateway/pin"
	"github.com/bastion-mcp/bastion/upstream"
)

type pinFlags struct {
	config  string
	file    string
	timeout time.Duration
}

// load reads the configuration and opens the pins file it names (or --file).
func (f *pinFlags) load() (*config.File, *pin.FileStore, error) {
	cfg, err := config.Load(f.config)
	if err != nil {
		return nil, nil, err
	}
	if f.file != "" {
		return cfg, pin.NewFileStore(f.file), nil
	}
	paths, err := app.ResolveGatewayPaths(cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	return cfg, pin.NewFileStore(paths.Pins), nil
}

func newPinCmd() *cobra.Command {
	var f pinFlags
	cmd := &cobra.Command{
		Use:   "pin",
		Short: "List the gateway's pinned tool definitions and re-approve drifted ones",
		Long: `The gateway pins a hash of every upstream tool's definition (name, title,
description, schemas, annotations). A tool whose definition changed since it
was approved (a rug pull), or that appeared after its server was approved, is
hidden and denied until ` + "`bastion pin approve`" + ` pins what the server offers
now. Pins live in [pins] file (default pins.json beside the audit directory).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.config, "config", "bastion.toml", "gateway configuration file")
	pf.StringVar(&f.file, "file", "", "pins file (overrides [pins] file)")
	pf.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for each upstream")
	cmd.AddCommand(newPinListCmd(&f), newPinApproveCmd(&f))
	return cmd
}

func newPinListCmd(f *pinFlags) *cobra.Command {
	var offline bool
	cmd := &cobra.Command{
		Use:   "list [SERVER...]",
		Short: "List pinned tools per server and, unless --offline, which live definitions drifted",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, store, err := f.load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			stored, err := store.All(ctx)
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				names = slices.Sorted(maps.Keys(cfg.Servers))
				for s := range stored {
					if _, ok := cfg.Servers[s]; !ok {
						names = append(names, s)
					}
				}
			}
			log, err := newLogger(cmd, cmd.ErrOrStderr(), slog.LevelWarn)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SERVER\tTOOL\tPINNED\tLIVE\tSTATUS")
			for _, srv := range names {
				pins := stored[srv]
				_, configured := cfg.Servers[srv]
				var live map[string]pin.Hash
				status := "not checked (--offline)"
				switch {
				case !configured:
					status = "not in the configuration"
				case !offline:
					raw, err := liveTools(ctx, cfg, srv, f, log)
					if err != nil {
						status = "unreachable"
						fmt.Fprintf(cmd.ErrOrStderr(), "bastion pin list: %s: %v\n", srv, err)
						break
					}
					live = map[string]pin.Hash{}
					for _, t := range raw {
						name, h, err := pin.Sum(t)
						if err != nil {
							continue // an unnamed tool cannot be listed, let alone pinned
						}
						live[name] = h
					}
				}
				if pins == nil && live == nil {
					fmt.Fprintf(w, "%s\t-\t-\t-\tnever approved; %s\n", srv, status)
					continue
				}
				tools := slices.Sorted(maps.Keys(pins))
				for t := range live {
					if _, ok := pins[t]; !ok {
						tools = append(tools, t)
					}
				}
				slices.Sort(tools)
				if len(tools) == 0 {
					fmt.Fprintf(w, "%s\t-\t-\t-\tapproved with no tools\n", srv)
				}
				for _, t := range tools {
					p, pinned := pins[t]
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", srv, t, short(p, pinned), short(live[t], live != nil && live[t] != pin.Hash{}),
						pinStatus(p, pinned, pins != nil, live, t, status))
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&offline, "offline", false, "list the stored pins without connecting to the upstreams")
	return cmd
}

// short is a hash's first 12 hex digits, or "-".
func short(h pin.Hash, ok bool) string {
	if !ok {
		return "-"
	}
	return h.String()[:12]
}

// pinStatus says what the gateway does with tool given its pin and, when
// the upstream was reached, its live definition.
func pinStatus(p pin.Hash, pinned, approved bool, live map[string]pin.Hash, tool, unchecked string) string {
	if live == nil {
		return unchecked
	}
	h, offered := live[tool]
	switch {
	case !offered:
		return "removed (no longer offered)"
	case !pinned && approved:
		return "new: held until approved"
	case !pinned:
		return "never approved (pinned at first gateway connect when tofu is on)"
	case p != h:
		return "CHANGED: hidden and denied until approved"
	}
	return "ok"
}

func newPinApproveCmd(f *pinFlags) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "approve SERVER [TOOL...]",
		Short: "Pin the definitions SERVER offers now (all its tools, or only the named ones)",
		Long: `approve connects to SERVER as the gateway does, lists its tools and pins
their current definitions. With no TOOL it pins exactly what the server offers
(dropping pins of tools it no longer offers); with TOOLs it re-pins only those.
It prints what changed, with each changed or new tool's description, so the
approval is of a definition a human has seen. A running gateway uses the new
pins when it next re-lists the server (tools/list_changed or a reconnect) or
restarts.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, store, err := f.load()
			if err != nil {
				return err
			}
			srv, tools := args[0], args[1:]
			if _, ok := cfg.Servers[srv]; !ok {
				return fmt.Errorf("no [server.%s] in %s", srv, f.config)
			}
			ctx := cmd.Context()
			log, err := newLogger(cmd, cmd.ErrOrStderr(), slog.LevelWarn)
			if err != nil {
				return err
			}
			raw, err := liveTools(ctx, cfg, srv, f, log)
			if err != nil {
				return fmt.Errorf("%s: %w", srv, err)
			}
			g := pin.New(store, pin.Options{Mode: pin.Strict})
			rep, err := g.Observe(ctx, srv, raw)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			want := func(t string) bool { return len(tools) == 0 || slices.Contains(tools, t) }
			descs := descriptions(raw)
			for _, l := range []struct {
				what  string
				names []string
			}{{"changed", rep.Changed}, {"new", rep.Added}, {"removed", rep.Removed}, {"malformed (not pinned)", rep.Invalid}} {
				for _, t := range l.names {
					if !want(t) {
						continue
					}
					fmt.Fprintf(out, "%s %s", l.what, t)
					if d, ok := descs[t]; ok && l.what != "removed" {
						fmt.Fprintf(out, ": %q", d)
					}
					fmt.Fprintln(out)
				}
			}
			if dryRun {
				fmt.Fprintf(out, "dry run: pins of %s unchanged in %s\n", srv, store.Path())
				return nil
			}
			if err := g.Approve(ctx, srv, tools...); err != nil {
				return err
			}
			pins, err := store.Load(ctx, srv)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "approved %s: %d tools pinned in %s\n", srv, len(pins), store.Path())
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be approved without saving")
	return cmd
}

// descriptions maps tool names to their descriptions, one line each and
// bounded, for the operator to read before trusting them.
func descriptions(raw []json.RawMessage) map[string]string {
	out := map[string]string{}
	for _, r := range raw {
		var t struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		if json.Unmarshal(r, &t) != nil {
			continue
		}
		d := strings.Join(strings.Fields(t.Description), " ")
		if r := []rune(d); len(r) > 200 {
			d = string(r[:200]) + "…"
		}
		out[t.Name] = d
	}
	return out
}

// liveTools connects to the configured server srv through the gateway's
// own dial path and returns its tools as the gateway observes them (the
// JSON of each *mcp.Tool), so the hashes match the gateway's.
func liveTools(ctx context.Context, cfg *config.File, srv string, f *pinFlags, log *slog.Logger) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	inProcess := map[string]func(context.Context) (mcp.Transport, error){}
	if cfg.Servers[srv].Kind == config.KindReview {
		// Listing needs the tools' definitions only: no store, no browser.
		inProcess[srv] = app.ReviewToolLister
	}
	guard := egress.NewGuard(egress.Policy{Logger: log}, net.DefaultResolver)
	conn, err := loop.StandardDialer(cfg, upstream.Deps{Logger: log, Guard: guard}, inProcess)(ctx, srv, nil)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	tools, err := conn.Tools(ctx)
	if err != nil {
		return nil, err
	}
	raw := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		raw = append(raw, b)
	}
	return raw, nil
}
