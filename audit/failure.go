package audit

import (
	"fmt"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
)

// fail puts the ledger in the failed state after a failed write, fsync or
// checkpoint: every Append is refused at once until retry makes a write
// durable again. The records assigned after the last durable one are
// dropped, never written: the chain resumes from the durable head, so a
// record that may be half on disk is never built upon, and the batch
// gathered behind the failed one fails with it. The caller holds io.
func (l *Ledger) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err, l.failedAt, l.refused = err, l.opts.Now(), 0
	}
	l.lastErr = err
	l.gen++
	l.seq, l.head = l.durableSeq, l.durableHash
	doomed := l.cur
	if doomed.n == 0 {
		l.cur.gen = l.gen
		return
	}
	l.cur = newBatch()
	l.cur.gen = l.gen
	doomed.err = err
	close(doomed.done)
	select {
	case <-doomed.lead:
		// Nobody writes now: the lead had passed to the dropped batch and
		// no waiter had taken it.
		l.writing = false
	default:
		// Either a commit is under way (it passes the lead on when it
		// ends) or a waiter took the lead and its commit passes it on.
	}
}

// retry runs while the ledger has failed: it repairs the live files (cuts
// whatever the failed write left past the last durable record) and appends
// a recovered record saying how long appends were refused. When that record
// is durable, appends are taken again; until then nothing changes.
func (l *Ledger) retry() {
	l.io.Lock()
	defer l.io.Unlock()
	l.mu.Lock()
	cause, since, refused := l.err, l.failedAt, l.refused
	l.mu.Unlock()
	if cause == nil {
		return
	}
	if err := l.repair(); err != nil {
		return
	}
	now := l.opts.Now()
	r := Record{RequestID: NewRequestID(), Method: "ledger", Decision: Recovered, Rule: "ledger:write-failed",
		Reason: clip.String(fmt.Sprintf("the ledger could not write from %s to %s and refused %d requests meanwhile: %v",
			since.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), refused, cause), maxReason),
		Seq: l.durableSeq + 1, PrevHash: l.durableHash, Time: now.UTC(), Warnings: []string{}, Version: formatVersion}
	r.Hash = r.ComputeHash()
	if err := l.write(append(r.AppendCanonical(nil), '\n')); err != nil {
		l.mu.Lock()
		l.lastErr = err
		l.mu.Unlock()
		return
	}
	l.durableSeq, l.durableHash = r.Seq, r.Hash
	l.mu.Lock()
	l.seq, l.head, l.err = r.Seq, r.Hash, nil
	l.mu.Unlock()
}

// repair cuts the live segment and the checkpoints file back to what is
// known durable, preallocates the segment again where it can, and flushes
// both. The caller holds io.
func (l *Ledger) repair() error {
	if err := l.seg.Truncate(l.segSize); err != nil {
		return fmt.Errorf("audit: repair: %w", err)
	}
	if l.segSize < l.opts.MaxFileBytes {
		if _, err := preallocate(l.seg, l.opts.MaxFileBytes); err != nil {
			return fmt.Errorf("audit: repair: %w", err)
		}
	}
	if err := l.seg.Sync(); err != nil {
		return fmt.Errorf("audit: repair: %w", err)
	}
	if err := l.ckpt.Truncate(l.ckptSize); err != nil {
		return fmt.Errorf("audit: repair checkpoints: %w", err)
	}
	if err := l.ckpt.Sync(); err != nil {
		return fmt.Errorf("audit: repair checkpoints: %w", err)
	}
	return nil
}

// Err reports the ledger's health: nil while it takes appends, else a
// fault.Unavailable whose cause is the failed write. It is what a
// readiness check asks.
func (l *Ledger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return fault.Wrap(ErrClosed, fault.Unavailable, "the audit ledger is closed")
	case l.err != nil:
		return fault.Wrap(l.err, fault.Unavailable, "the audit ledger cannot write; governed calls are refused until it can")
	}
	return nil
}
