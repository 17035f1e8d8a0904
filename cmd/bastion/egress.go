package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/bastion-mcp/bastion/app"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/spf13/cobra"
)

func newEgressCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "egress",
		Short: "Inspect the SSRF egress guard",
	}
	cmd.AddCommand(newEgressCheckCmd())
	return cmd
}

func newEgressCheckCmd() *cobra.Command {
	var (
		resolves     []string
		verified     []string
		tenant       string
		dataDir      string
		allowHTTP    bool
		allowPrivate bool
		target       bool
		asJSON       bool
	)
	cmd := &cobra.Command{
		Use:   "check [flags] URL",
		Short: "Apply the egress policy (or, with --target, the target policy) to a URL",
		Long: `check prints "allow <canonical-url> <pinned-ip>" and exits 0, or prints
"reject <CODE>" and exits 1. With --resolve HOST=IP[,IP...] no real DNS is asked
for HOST; other hosts are resolved by the system resolver. With --target, a host
counts as verified when --verified names it or, with --tenant, when that
tenant's registry in --data-dir holds a live ownership proof for it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			static, err := parseResolves(resolves)
			if err != nil {
				return err
			}
			var r egress.Resolver
			if len(static) > 0 {
				r = static.Over(net.DefaultResolver)
			}
			g := egress.NewGuard(egress.Policy{AllowHTTP: allowHTTP, AllowPrivate: allowPrivate}, r)
			var t egress.Target
			if target {
				v := anyVerifier{verifiedHosts(verified)}
				if tenant != "" {
					b, err := app.OpenBase(cmd.Context(), app.Config{DataDir: dataDir})
					if err != nil {
						return err
					}
					defer b.Close()
					v = append(v, b.Targets.Verifier(tenant))
				}
				t, err = g.CheckTarget(cmd.Context(), args[0], v)
			} else {
				t, err = g.Check(cmd.Context(), args[0])
			}
			return printDecision(cmd.OutOrStdout(), t, err, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&resolves, "resolve", nil, "answer HOST with these addresses instead of asking DNS (HOST=IP[,IP...]; repeatable)")
	f.StringArrayVar(&verified, "verified", nil, "with --target, a host that counts as ownership-verified (repeatable)")
	f.StringVar(&tenant, "tenant", "", "with --target, also count the hosts this tenant has proved it owns (bastion targets)")
	f.StringVar(&dataDir, "data-dir", "", "with --tenant, the directory of the store (default $XDG_DATA_HOME/bastion)")
	f.BoolVar(&allowHTTP, "allow-http", false, "allow plain http (and port 80)")
	f.BoolVar(&allowPrivate, "allow-private", false, "allow loopback and private addresses, any port (a local operator reviewing a dev server)")
	f.BoolVar(&target, "target", false, "apply the target policy: a verified DNS name, not just any public address")
	f.BoolVar(&asJSON, "json", false, "print the decision as JSON")
	return cmd
}

// parseResolves turns --resolve HOST=IP[,IP...] flags into a StaticResolver.
func parseResolves(flags []string) (egress.StaticResolver, error) {
	s := egress.StaticResolver{}
	for _, f := range flags {
		host, ips, ok := strings.Cut(f, "=")
		if !ok || host == "" {
			return nil, fmt.Errorf("--resolve %q: want HOST=IP[,IP...]", f)
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		for ip := range strings.SplitSeq(ips, ",") {
			if ip == "" {
				continue // HOST= means "no records"
			}
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return nil, fmt.Errorf("--resolve %q: %w", f, err)
			}
			s[host] = append(s[host], a)
		}
		if _, ok := s[host]; !ok {
			s[host] = nil
		}
	}
	return s, nil
}

// verifiedHosts is the --verified list as an egress.HostVerifier.
type verifiedHosts []string

func (v verifiedHosts) IsVerified(_ context.Context, host string) (bool, error) {
	for _, h := range v {
		if strings.TrimSuffix(strings.ToLower(h), ".") == host {
			return true, nil
		}
	}
	return false, nil
}

// anyVerifier verifies a host that any of its verifiers verifies.
type anyVerifier []egress.HostVerifier

func (a anyVerifier) IsVerified(ctx context.Context, host string) (bool, error) {
	for _, v := range a {
		ok, err := v.IsVerified(ctx, host)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

type egressDecision struct {
	Decision   string `json:"decision"`
	URL        string `json:"url,omitempty"`
	PinnedIP   string `json:"pinned_ip,omitempty"`
	Code       string `json:"code,omitempty"`
	Message    string `json:"message,omitempty"`
	Retriable  *bool  `json:"retriable,omitempty"`
	NextAction string `json:"next_action,omitempty"`
}

func printDecision(w io.Writer, t egress.Target, err error, asJSON bool) error {
	var d egressDecision
	if err != nil {
		fe := fault.From(err, "the URL could not be checked")
		d = egressDecision{Decision: "reject", Code: string(fe.Code), Message: fe.Message, Retriable: &fe.Retriable, NextAction: string(fe.NextAction)}
	} else {
		d = egressDecision{Decision: "allow", URL: t.URL.String(), PinnedIP: t.Addrs[0].String()}
	}
	if asJSON {
		b, jerr := json.Marshal(d)
		if jerr != nil {
			return jerr
		}
		fmt.Fprintf(w, "%s\n", b)
	} else if err != nil {
		fmt.Fprintf(w, "reject %s\n", d.Code)
	} else {
		fmt.Fprintf(w, "allow %s %s\n", d.URL, d.PinnedIP)
	}
	if err != nil {
		return exitError{1}
	}
	return nil
}
