// Package approval is the queue of calls the policy parks for a human:
// the gateway loop requests and consumes approvals, and `bastion
// approvals` lists and decides them, possibly from another process (File).
//
// Invariant: one approval admits exactly one call. An approved or denied
// approval is marked Used once acted on, and a call matches an approval
// only with the same tenant, principal, server, tool and argument digest.
package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Status is where a parked call stands.
type Status string

// The approval states. A call is parked as Pending; a human moves it to
// Approved or Denied; the replay of an approved call (or the agent learning
// of a denial) moves it to Used, so one approval admits exactly one call.
const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Denied   Status = "denied"
	Used     Status = "used"
)

// Approval is one parked call.
type Approval struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Principal string    `json:"principal"`
	Server    string    `json:"server"`
	Tool      string    `json:"tool"`
	Name      string    `json:"name"` // the client-facing tool name
	ArgsHash  string    `json:"args_sha256"`
	Rule      string    `json:"rule"`
	Reason    string    `json:"reason"`
	Status    Status    `json:"status"`
	Created   time.Time `json:"created"`
	Decided   time.Time `json:"decided,omitzero"`
	DecidedBy string    `json:"decided_by,omitempty"`
}

// key is what makes two calls "the same call" for an approval.
func (a *Approval) key() [5]string {
	return [5]string{a.Tenant, a.Principal, a.Server, a.Tool, a.ArgsHash}
}

// ErrNotFound is returned by Decide for an unknown or already
// decided id.
var ErrNotFound = errors.New("approval: no pending approval with that id")

// Queue keeps parked calls. The loop calls Request when the policy
// parks a call and Consume when a decided approval has been acted on; the
// `bastion approvals` command calls List and Decide. Implementations must be
// safe for concurrent use.
type Queue interface {
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

// Mem is an in-memory Queue, for tests and a gateway whose
// approvals need not survive a restart.
type Mem struct {
	mu   sync.Mutex // guards list
	list []Approval
	now  func() time.Time
}

// NewMem returns an empty Mem.
func NewMem() *Mem { return &Mem{now: time.Now} }

// Request implements Queue.
func (m *Mem) Request(_ context.Context, want Approval) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return request(&m.list, want, m.now())
}

// Consume implements Queue.
func (m *Mem) Consume(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	consume(m.list, id)
	return nil
}

// List implements Queue.
func (m *Mem) List(context.Context) ([]Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.list), nil
}

// Decide implements Queue.
func (m *Mem) Decide(_ context.Context, id string, approve bool, by string) (Approval, error) {
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
	return Approval{}, ErrNotFound
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("approval: approval id: %w", err)
	}
	return "apr_" + hex.EncodeToString(b[:]), nil
}
