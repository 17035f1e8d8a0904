package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

const docURI = "test://doc"

// docServer serves one subscribable resource and a tool that announces it
// changed.
func docServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{Name: "doc", URI: docURI, MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: docURI, Text: "v"}}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Announces that the document changed."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: docURI})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, err
		})
	return s
}

// updatesClient connects p on version and returns a channel of the
// resource updates it receives.
func updatesClient(t *testing.T, b *bundle, p principal.Principal, version string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := b.loop.NewServer(ctx, p).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "updates", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { got <- r.Params.URI },
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, got
}

func expectUpdate(t *testing.T, got <-chan string, want bool, who string) {
	t.Helper()
	wait := 200 * time.Millisecond
	if want {
		wait = 10 * time.Second
	}
	select {
	case uri := <-got:
		if !want {
			t.Errorf("%s got an update of %s it did not subscribe to", who, uri)
		} else if uri != docURI {
			t.Errorf("%s got an update of %s", who, uri)
		}
	case <-time.After(wait):
		if want {
			t.Errorf("%s got no update", who)
		}
	}
}

// TestResourceUpdatesRelayed: an upstream's notifications/resources/updated
// reaches the clients that subscribed through the gateway and no other, on
// both revisions (resources/subscribe, and subscriptions/listen); the
// shared upstream subscription lasts until the last subscriber leaves.
func TestResourceUpdatesRelayed(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			testResourceUpdates(t, v)
		})
	}
}

func testResourceUpdates(t *testing.T, version string) {
	srv := docServer()
	b := setup(t, `
[server.d]
kind = "review"

[[policy.rule]]
name = "all"
action = "allow"
match = ["d__*"]
`, setupOpts{inProcess: map[string]func(context.Context) (mcp.Transport, error){
		"d": inProcess(func() *mcp.Server { return srv }),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, aGot := updatesClient(t, b, alice, version)
	c, cGot := updatesClient(t, b, alice, version)
	bo, boGot := updatesClient(t, b, bob, version)
	for _, cs := range []*mcp.ClientSession{a, c} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: docURI}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}
	// On 2026-07-28 Subscribe opens a listen stream without waiting for
	// the server to acknowledge it: touch until both subscribers hear.
	heardA, heardC := false, false
	for deadline := time.Now().Add(10 * time.Second); !heardA || !heardC; {
		if time.Now().After(deadline) {
			t.Fatalf("subscribers got no update (a %v, c %v)", heardA, heardC)
		}
		if _, isErr := call(t, bo, "d__touch", nil); isErr {
			t.Fatal("touch failed")
		}
		for _, w := range []struct {
			ch    <-chan string
			heard *bool
		}{{aGot, &heardA}, {cGot, &heardC}} {
			select {
			case uri := <-w.ch:
				if uri != docURI {
					t.Fatalf("update of %s", uri)
				}
				*w.heard = true
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	expectUpdate(t, boGot, false, "non-subscriber")
	// Drain what the extra touches left, so each check below sees only
	// the updates after it.
	for _, ch := range []<-chan string{aGot, cGot} {
		for len(ch) > 0 {
			<-ch
		}
	}

	// One subscriber leaves: the other still hears of changes.
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: docURI}); err != nil {
		t.Fatal(err)
	}
	// On 2026-07-28 unsubscribing cancels a listen stream, which the server
	// learns of asynchronously: an update may still cross it, but updates
	// must stop.
	for try := 0; ; try++ {
		call(t, bo, "d__touch", nil)
		expectUpdate(t, cGot, true, "remaining subscriber")
		select {
		case <-aGot:
			if try == 20 {
				t.Fatal("the unsubscribed client still gets updates")
			}
			continue
		case <-time.After(200 * time.Millisecond):
		}
		break
	}
}
