package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/audit"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify and export the hash-linked audit ledger",
	}
	cmd.AddCommand(newAuditVerifyCmd(), newAuditTailCmd())
	return cmd
}

// auditDir returns --dir or the default ledger directory.
func auditDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return audit.DefaultDir(os.Getenv)
}

func newAuditVerifyCmd() *cobra.Command {
	var dir, pubkey string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the ledger's hashes, sequence and signed checkpoints; exit 1 on tampering or truncation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := auditDir(dir)
			if err != nil {
				return err
			}
			var pub ed25519.PublicKey
			if pubkey != "" {
				b, err := os.ReadFile(pubkey)
				if err != nil {
					return err
				}
				if pub, err = audit.ParsePublicKey(b); err != nil {
					return err
				}
			}
			rep, err := audit.Verify(d, pub)
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(cmd.ErrOrStderr(), "no ledger at %s: nothing to verify\n", d)
				return exitError{1}
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if rep.Broken {
				fmt.Fprintf(out, "broken at seq %d: %s\n", rep.BrokenAt, rep.Reason)
				return exitError{1}
			}
			fmt.Fprintf(out, "ok: %d records, last seq %d, checkpoints %d\n", rep.Records, rep.LastSeq, rep.Checkpoints)
			if rep.Unsealed > 0 {
				fmt.Fprintf(out, "note: %d records after the last checkpoint (seq %d) are not yet sealed against truncation\n", rep.Unsealed, rep.LastCheckpoint)
			}
			if rep.TornBytes > 0 {
				fmt.Fprintf(out, "note: %d bytes of a torn final line (a crash mid-append); the next open cuts and records them\n", rep.TornBytes)
			}
			if rep.KeyFromDir {
				fmt.Fprintf(out, "note: checkpoints were checked with the key stored in the ledger dir (key id %s); pass --pubkey to pin it\n", rep.KeyID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "ledger directory (default $XDG_DATA_HOME/bastion/audit)")
	cmd.Flags().StringVar(&pubkey, "pubkey", "", "Ed25519 public key (PEM) that signed the checkpoints (default: checkpoint.pub in the ledger dir)")
	return cmd
}

func newAuditTailCmd() *cobra.Command {
	var (
		dir, format string
		follow      bool
		n           int
	)
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print ledger records as json, ocsf, cef or syslog lines",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := audit.ParseFormat(format)
			if err != nil {
				return err
			}
			d, err := auditDir(dir)
			if err != nil {
				return err
			}
			host, _ := os.Hostname()
			meta := audit.ExportMeta{Version: version, Hostname: host}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			err = audit.Tail(ctx, d, audit.TailOptions{Last: n, Follow: follow}, func(r audit.Record) error {
				w.Write(audit.Export(f, r, meta))
				if err := w.WriteByte('\n'); err != nil {
					return err
				}
				if follow {
					return w.Flush()
				}
				return nil
			})
			if follow && errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "ledger directory (default $XDG_DATA_HOME/bastion/audit)")
	cmd.Flags().StringVar(&format, "format", "json", "output format: json, ocsf, cef or syslog")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new records as they are appended")
	cmd.Flags().IntVarP(&n, "lines", "n", 20, "print only the last N records first (0: all)")
	return cmd
}
