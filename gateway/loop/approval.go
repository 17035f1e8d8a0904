package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ApprovalStatus is where a parked call stands.
type ApprovalStatus string

// The approval states. A call is parked as Pending; a human moves it to
// Approved or Denied; the replay of an approved call (or the agent learning
// of a denial) moves it to Used, so one approval admits exactly one call.
const (
	Pending  ApprovalStatus = "pending"
	Approved ApprovalStatus = "approved"
	Denied   ApprovalStatus = "denied"
	Used     ApprovalStatus = "used"
)

// Approval is one parked call.
type Approval struct {
	ID        string         `json:"id"`
	Tenant    string         `json:"tenant"`
	Principal string         `json:"principal"`
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Name      string         `json:"name"` // the client-facing tool name
	ArgsHash  string         `json:"args_sha256"`
	Rule      string         `json:"rule"`
	Reason    string         `json:"reason"`
	Status    ApprovalStatus `json:"status"`
	Created   time.Time      `json:"created"`
	Decided   time.Time      `json:"decided,omitzero"`
	DecidedBy string         `json:"decided_by,omitempty"`
}

// key is what makes two calls "the same call" for an approval.
func (a *Approval) key() [5]string {
	return [5]string{a.Tenant, a.Principal, a.Server, a.Tool, a.ArgsHash}
}

// ErrApprovalNotFound is returned by Decide for an unknown or already
// decided id.
var ErrApprovalNotFound = errors.New("loop: no pending approval with that id")

// Approvals keeps parked calls. The loop calls Request when the policy
// parks a call and Consume when a decided approval has been acted on; the
// `bastion approvals` command calls List and Decide. Implementations must be
// safe for concurrent use.
type Approvals interface {
	// Request returns the open (not Used) approval for the same principal,
	// server, tool and arguments as want, or records want as Pending.
	Request(ctx context.Context, want Approval) (Approval, error)
	// Consume marks an approved or denied approval Used.
	Consume(ctx context.Context, id string) error
	// List returns every approval, oldest first.
	List(ctx context.Context) ([]Approval, error)
	// Decide approves or denies a pending approval.
	Decide(ctx context.Context, id string, approve bool, by string) (Approval, error)
}

// MemApprovals is an in-memory Approvals, for tests and a gateway whose
// approvals need not survive a restart.
type MemApprovals struct {
	mu   sync.Mutex // guards list
	list []Approval
	now  func() time.Time
}

// NewMemApprovals returns an empty MemApprovals.
func NewMemApprovals() *MemApprovals { return &MemApprovals{now: time.Now} }

// Request implements Approvals.
func (m *MemApprovals) Request(_ context.Context, want Approval) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return request(&m.list, want, m.now())
}

// Consume implements Approvals.
func (m *MemApprovals) Consume(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	consume(m.list, id)
	return nil
}

// List implements Approvals.
func (m *MemApprovals) List(context.Context) ([]Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.list), nil
}

// Decide implements Approvals.
func (m *MemApprovals) Decide(_ context.Context, id string, approve bool, by string) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return decide(m.list, id, approve, by, m.now())
}

func request(list *[]Approval, want Approval, now time.Time) (Approval, error) {
	k := want.key()
	for _, a := range *list {
		if a.Status != Used && a.key() == k {
			return a, nil
		}
	}
	id, err := newID()
	if err != nil {
		return Approval{}, err
	}
	want.ID, want.Status, want.Created = id, Pending, now.UTC()
	*list = append(*list, want)
	return want, nil
}

func consume(list []Approval, id string) {
	for i := range list {
		if list[i].ID == id && (list[i].Status == Approved || list[i].Status == Denied) {
			list[i].Status = Used
		}
	}
}

func decide(list []Approval, id string, approve bool, by string, now time.Time) (Approval, error) {
	for i := range list {
		if list[i].ID == id && list[i].Status == Pending {
			list[i].Status = Denied
			if approve {
				list[i].Status = Approved
			}
			list[i].Decided, list[i].DecidedBy = now.UTC(), by
			return list[i], nil
		}
	}
	return Approval{}, ErrApprovalNotFound
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("loop: approval id: %w", err)
	}
	return "apr_" + hex.EncodeToString(b[:]), nil
}

// FileApprovals keeps approvals in one JSON file, so `bastion approvals`
// in another process can decide what a running gateway parked. Every
// operation re-reads the file and replaces it atomically (write, fsync,
// rename); within one process a mutex serializes them. Two processes that
// write in the same instant can lose one update (the file has no lock);
// the loser's effect is a call that stays parked, never one admitted.
type FileApprovals struct {
	path string
	mu   sync.Mutex // serializes read-modify-write cycles in this process
	now  func() time.Time
}

// NewFileApprovals returns a FileApprovals over path (created on first write).
func NewFileApprovals(path string) *FileApprovals {
	return &FileApprovals{path: path, now: time.Now}
}

// maxApprovalsFile bounds the file read; a larger one is refused.
const maxApprovalsFile = 16 << 20

func (f *FileApprovals) load() ([]Approval, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loop: approvals: %w", err)
	}
	if len(b) > maxApprovalsFile {
		return nil, fmt.Errorf("loop: approvals file %s is too large", f.path)
	}
	var list []Approval
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("loop: approvals file %s: %w", f.path, err)
	}
	return list, nil
}

func (f *FileApprovals) save(list []Approval) error {
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("loop: approvals: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".approvals-*")
	if err != nil {
		return fmt.Errorf("loop: approvals: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("loop: approvals: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("loop: approvals: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("loop: approvals: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("loop: approvals: %w", err)
	}
	return nil
}

// update runs fn on the current list and saves it if fn changed it.
func (f *FileApprovals) update(fn func(list *[]Approval) (changed bool, err error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	list, err := f.load()
	if err != nil {
		return err
	}
	changed, err := fn(&list)
	if err != nil || !changed {
		return err
	}
	return f.save(list)
}

// Request implements Approvals.
func (f *FileApprovals) Request(_ context.Context, want Approval) (Approval, error) {
	var out Approval
	err := f.update(func(list *[]Approval) (bool, error) {
		n := len(*list)
		a, err := request(list, want, f.now())
		out = a
		return len(*list) != n, err
	})
	return out, err
}

// Consume implements Approvals.
func (f *FileApprovals) Consume(_ context.Context, id string) error {
	return f.update(func(list *[]Approval) (bool, error) {
		consume(*list, id)
		return true, nil
	})
}

// List implements Approvals.
func (f *FileApprovals) List(context.Context) ([]Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load()
}

// Decide implements Approvals.
func (f *FileApprovals) Decide(_ context.Context, id string, approve bool, by string) (Approval, error) {
	var out Approval
	err := f.update(func(list *[]Approval) (bool, error) {
		a, err := decide(*list, id, approve, by, f.now())
		out = a
		return err == nil, err
	})
	return out, err
}
