package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/remote"
	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/evidence"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

const secret = "acme-secret-0123456789abcdefghijklmnop"

// pngCrop is evidence with a PNG's signature, which the client requires.
var pngCrop = []byte("\x89PNG\r\n\x1a\nbastion-test-crop")

// engineServer is one engine job API on loopback over its own
// review.Service, as `bastion engine serve` composes it.
type engineServer struct {
	srv     *httptest.Server
	harness *reviewtest.Harness
	posts   atomic.Int32
	deletes chan string // job ids DELETEd, when non-nil

	killOnce sync.Once

	mu     sync.Mutex
	before func(w http.ResponseWriter, r *http.Request) bool // answers instead of the API when it returns true
}

type serverOptions struct {
	engine  review.Engine
	site    string // reviewtest.Site URL the authorizer sends the engine to
	secret  string
	now     func() time.Time
	deletes bool
}

func newEngineServer(t *testing.T, o serverOptions) *engineServer {
	t.Helper()
	ho := reviewtest.Options{Start: true, Engine: o.engine}
	if o.site != "" {
		ho.Authorizer = func(*sqlite.DB) review.Authorizer {
			return &reviewtest.HostAuthorizer{Hosts: []string{reviewtest.PreviewHost}, Site: o.site}
		}
	}
	es := &engineServer{harness: reviewtest.New(t, ho)}
	if o.deletes {
		es.deletes = make(chan string, 4)
	}
	sec := secret
	if o.secret != "" {
		sec = o.secret
	}
	secrets, err := enginehttp.ParseSecrets([]byte("acme " + sec + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	es.srv = httptest.NewUnstartedServer(nil)
	api := enginehttp.NewHandler(es.harness.Service, enginehttp.Options{
		Secrets: func() *enginehttp.Secrets { return secrets }, BaseURL: "http://" + es.srv.Listener.Addr().String(), Now: o.now,
	})
	es.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		es.mu.Lock()
		before := es.before
		es.mu.Unlock()
		if before != nil && before(w, r) {
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/jobs":
			es.posts.Add(1)
		case r.Method == http.MethodDelete && es.deletes != nil:
			es.deletes <- strings.TrimPrefix(r.URL.Path, "/jobs/")
		}
		api.ServeHTTP(w, r)
	})
	es.srv.Start()
	t.Cleanup(es.kill)
	return es
}

// installation is the principal the engine runs an installation's jobs as.
func (es *engineServer) installation(t *testing.T) principal.Principal {
	return reviewtest.NewPrincipal(t, "acme", "engine-installation", principal.ReviewsRead)
}

func newRemote(t *testing.T, o remote.Options, servers ...*engineServer) *remote.Engine {
	t.Helper()
	for _, s := range servers {
		o.URLs = append(o.URLs, s.srv.URL)
	}
	if o.Installation == "" {
		o.Installation, o.Secret = "acme", []byte(secret)
	}
	o.Guard = egress.NewGuard(egress.Policy{}, nil).WithPrivate()
	o.PollInterval = 20 * time.Millisecond
	e, err := remote.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func request(routes ...string) engine.Request {
	return engine.Request{URL: "https://" + reviewtest.PreviewHost + "/", Routes: routes, Viewports: []design.Viewport{design.Mobile}}
}

// result is a review of route at mobile with one contrast finding that
// has evidence.
func result(route string) *design.Result {
	id := design.FindingID("contrast", route, "#cta")
	return &design.Result{
		Grade: design.NeedsWork,
		Findings: []design.Finding{{ID: id, Kind: "contrast", Severity: design.Major, Title: "Low contrast", Route: route, Selector: "#cta",
			Fix: "darken it", EvidenceID: "ev_" + id, Viewports: []design.Viewport{design.Mobile}, Facts: design.Facts{"ratio": 2.9}}},
		Evidence: []design.Evidence{{ID: "ev_" + id, MIMEType: "image/png", Data: pngCrop}},
		Coverage: design.Coverage{RoutesRequested: []string{route}, RoutesReviewed: []string{route},
			ViewportsRequested: []design.Viewport{design.Mobile}, ViewportsReviewed: []design.Viewport{design.Mobile}, ChecksRun: []string{"contrast"}},
	}
}

func wantFault(t *testing.T, err error, code fault.Code, retriable bool, text string) *fault.Error {
	t.Helper()
	e, ok := fault.As(err)
	if !ok || e.Code != code || e.Retriable != retriable || !strings.Contains(e.Message, text) {
		t.Fatalf("error %v, want %s (retriable %v) mentioning %q", err, code, retriable, text)
	}
	if strings.Contains(e.Message, "127.0.0.1") {
		t.Fatalf("the error names an engine's address: %q", e.Message)
	}
	return e
}

// TestReviewMapsTheResultBack: findings, coverage, grade and a fetched
// evidence crop survive the §15 wire.
func TestReviewMapsTheResultBack(t *testing.T) {
	t.Parallel()
	es := newEngineServer(t, serverOptions{engine: &reviewtest.Engine{Result: result("/")}})
	var seen []engine.Progress
	var mu sync.Mutex
	req := request("/")
	req.Progress = func(p engine.Progress) { mu.Lock(); seen = append(seen, p); mu.Unlock() }
	res, err := newRemote(t, remote.Options{}, es).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := result("/")
	got := res.Findings
	if res.Grade != design.NeedsWork || len(got) != 1 || got[0].ID != want.Findings[0].ID || got[0].Selector != "#cta" ||
		got[0].Fix != "darken it" || got[0].Facts["ratio"] != 2.9 || got[0].EvidenceID != want.Findings[0].EvidenceID {
		t.Fatalf("result %+v", res)
	}
	if len(res.Evidence) != 1 || string(res.Evidence[0].Data) != string(pngCrop) || res.Evidence[0].ID != got[0].EvidenceID {
		t.Fatalf("evidence %+v", res.Evidence)
	}
	if !res.Coverage.Complete() || res.Coverage.ChecksRun[0] != "contrast" {
		t.Fatalf("coverage %+v", res.Coverage)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || seen[0].Stage != engine.StageCapturing || seen[len(seen)-1].Stage != engine.StageJudging {
		t.Fatalf("progress %+v", seen)
	}
}

// TestOverviewsCrossTheWire: a page overview comes back with its marks,
// geometry and fetched image (named as bastion's engines name it); one
// whose drawn number is not its finding's place, and one of a route the
// review did not ask for, are dropped.
func TestOverviewsCrossTheWire(t *testing.T) {
	t.Parallel()
	res := result("/")
	fid := res.Findings[0].ID
	shot := []byte("\x89PNG\r\n\x1a\nbastion-test-overview")
	box := design.Rect{X: 16, Y: 120, W: 200, H: 40}
	res.Evidence = append(res.Evidence, design.Evidence{ID: "ev_ov_mobile", MIMEType: "image/png", Data: shot},
		design.Evidence{ID: "ev_ov_bad", MIMEType: "image/png", Data: shot}, design.Evidence{ID: "ev_ov_other", MIMEType: "image/png", Data: shot})
	res.Overviews = []design.Overview{
		{Route: "/", Viewport: design.Mobile, EvidenceID: "ev_ov_mobile", Scale: 0.5, Width: 390, Height: 2532,
			Marks: []design.OverviewMark{{N: 1, FindingID: fid, Box: box}}},
		{Route: "/", Viewport: design.Mobile, EvidenceID: "ev_ov_bad", Scale: 0.5, Width: 390, Height: 844,
			Marks: []design.OverviewMark{{N: 2, FindingID: fid, Box: box}}},
		{Route: "/other", Viewport: design.Mobile, EvidenceID: "ev_ov_other", Scale: 0.5, Width: 390, Height: 844, Marks: []design.OverviewMark{}},
	}
	es := newEngineServer(t, serverOptions{engine: &reviewtest.Engine{Result: res}})
	got, err := newRemote(t, remote.Options{}, es).Review(context.Background(), request("/"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Overviews) != 1 {
		t.Fatalf("overviews %+v, want the one whose marks are true", got.Overviews)
	}
	o := got.Overviews[0]
	if o.Route != "/" || o.Viewport != design.Mobile || o.Scale != 0.5 || o.Width != 390 || o.Height != 2532 ||
		len(o.Marks) != 1 || o.Marks[0] != (design.OverviewMark{N: 1, FindingID: fid, Box: box}) {
		t.Errorf("overview %+v", o)
	}
	if o.EvidenceID != evidence.ID("overview / mobile", shot) {
		t.Errorf("overview image named %q, want bastion's name for it", o.EvidenceID)
	}
	var img []byte
	for _, e := range got.Evidence {
		if e.ID == o.EvidenceID {
			img = e.Data
		}
	}
	if string(img) != string(shot) || len(got.Evidence) != 2 {
		t.Errorf("evidence %d item(s), overview image %q: want the crop and the one overview", len(got.Evidence), img)
	}
}

// TestReviewSpreadOverTwoEngines: a two-route review is one job on each
// engine, merged into one result.
func TestReviewSpreadOverTwoEngines(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	startedA, startedB := make(chan string, 1), make(chan string, 1)
	a := newEngineServer(t, serverOptions{engine: &reviewtest.Engine{Gate: gate, Started: startedA, Result: result("/a")}})
	b := newEngineServer(t, serverOptions{engine: &reviewtest.Engine{Gate: gate, Started: startedB, Result: result("/b")}})
	rm := newRemote(t, remote.Options{}, a, b)
	done := make(chan error, 1)
	var res *design.Result
	go func() {
		var err error
		res, err = rm.Review(context.Background(), request("/a", "/b"))
		done <- err
	}()
	<-startedA // both engines hold a job at once
	<-startedB
	for _, l := range rm.Loads() {
		if l.InFlight != 1 {
			t.Errorf("load %+v, want one job on each engine", rm.Loads())
		}
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.posts.Load() != 1 || b.posts.Load() != 1 {
		t.Fatalf("submissions %d and %d, want one each", a.posts.Load(), b.posts.Load())
	}
	// Each stub answers its own route whatever it is asked, so the merge
	// shows both: two findings, both routes, both crops.
	if len(res.Findings) != 2 || len(res.Evidence) != 2 || len(res.Coverage.RoutesReviewed) != 2 || res.Grade != design.NeedsWork {
		t.Fatalf("merged %+v", res)
	}
}

// TestEngineKilledMidJob: the engine running the job dies; the job is
// submitted again to the other engine and the review completes.
func TestEngineKilledMidJob(t *testing.T) {
	t.Parallel()
	stubA := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: result("/")}
	stubB := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: result("/")}
	a := newEngineServer(t, serverOptions{engine: stubA})
	b := newEngineServer(t, serverOptions{engine: stubB})
	rm := newRemote(t, remote.Options{RequestTimeout: 2 * time.Second}, a, b)
	done := make(chan error, 1)
	go func() { _, err := rm.Review(context.Background(), request("/")); done <- err }()
	dead, alive, survivor, orphan := a, b, stubB, stubA
	select {
	case <-stubA.Started:
	case <-stubB.Started:
		dead, alive, survivor, orphan = b, a, stubA, stubB
	}
	dead.kill()
	defer close(orphan.Gate) // the dead engine's job, so its service stops at once
	select {
	case <-survivor.Started: // the job was moved
	case err := <-done:
		t.Fatalf("the review ended without moving the job: %v", err)
	}
	close(survivor.Gate)
	if err := <-done; err != nil {
		t.Fatalf("the surviving engine did not finish the job: %v", err)
	}
	if alive.posts.Load() != 1 {
		t.Fatalf("the survivor got %d submissions, want 1", alive.posts.Load())
	}
	l := rm.Loads()
	if i := map[*engineServer]int{a: 0, b: 1}[dead]; !l[i].Down {
		t.Fatalf("loads %+v: the dead engine is not marked down", l)
	}
}

// TestLastEngineKilled: with no engine left the review fails UNAVAILABLE,
// retriable, instead of hanging.
func TestLastEngineKilled(t *testing.T) {
	t.Parallel()
	stub := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: result("/")}
	a := newEngineServer(t, serverOptions{engine: stub})
	rm := newRemote(t, remote.Options{RequestTimeout: 2 * time.Second}, a)
	done := make(chan error, 1)
	go func() { _, err := rm.Review(context.Background(), request("/")); done <- err }()
	<-stub.Started
	a.kill()
	defer close(stub.Gate)
	wantFault(t, <-done, fault.Unavailable, true, "no engine of the pool could finish the review")
}

// TestSignatureMismatch: a secret the engine does not hold is a typed,
// non-retriable error at once, not a hang or a retry loop.
func TestSignatureMismatch(t *testing.T) {
	t.Parallel()
	es := newEngineServer(t, serverOptions{secret: "another-secret-0123456789abcdefghijklmn"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := newRemote(t, remote.Options{}, es).Review(ctx, request("/"))
	wantFault(t, err, fault.UpstreamUnavailable, false, "secret")
	if es.posts.Load() != 1 {
		t.Fatalf("%d submissions, want 1 (a 401 is not retried)", es.posts.Load())
	}
}

// TestClockSkew: the engine refuses a timestamp outside its window; the
// error says the clocks differ.
func TestClockSkew(t *testing.T) {
	t.Parallel()
	es := newEngineServer(t, serverOptions{})
	skewed := func() time.Time { return time.Now().Add(enginehttp.MaxSkew + time.Minute) }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := newRemote(t, remote.Options{Now: skewed}, es).Review(ctx, request("/"))
	wantFault(t, err, fault.UpstreamUnavailable, false, "clock")
}

// TestRetryAfter: a 503 with Retry-After is retried, signed afresh.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	es := newEngineServer(t, serverOptions{engine: &reviewtest.Engine{Result: result("/")}})
	var refused atomic.Int32
	sigs := make(chan string, 4)
	es.setBefore(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost {
			return false
		}
		sigs <- r.Header.Get(enginehttp.HeaderSignature)
		if refused.Add(1) > 1 {
			return false
		}
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	if _, err := newRemote(t, remote.Options{}, es).Review(context.Background(), request("/")); err != nil {
		t.Fatal(err)
	}
	if first, second := <-sigs, <-sigs; first == second {
		t.Fatal("the retry reused the signature")
	}
}

// TestCancelDeletesTheJob: when the caller's context ends, the engine's job
// is DELETEd and ends cancelled there.
func TestCancelDeletesTheJob(t *testing.T) {
	t.Parallel()
	stub := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: result("/")}
	es := newEngineServer(t, serverOptions{engine: stub, deletes: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := newRemote(t, remote.Options{}, es).Review(ctx, request("/")); done <- err }()
	<-stub.Started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Review after cancel: %v", err)
	}
	id := <-es.deletes
	if j := es.harness.WaitTerminal(t, es.installation(t), id); j.Status != "cancelled" {
		t.Fatalf("the engine's job is %s, want cancelled", j.Status)
	}
}

// TestRecheckIsAFullReview: a finding seen again fails, one gone passes,
// one at a viewport the engine could not review is inconclusive.
func TestRecheckIsAFullReview(t *testing.T) {
	t.Parallel()
	es := newEngineServer(t, serverOptions{engine: &reviewtest.Engine{Result: result("/")}})
	still := result("/").Findings[0]
	gone := design.Finding{ID: design.FindingID("overflow", "/", ".table"), Kind: "overflow", Route: "/", Selector: ".table", Viewports: []design.Viewport{design.Mobile}}
	unseen := design.Finding{ID: design.FindingID("spacing", "/", ".card"), Kind: "spacing", Route: "/", Selector: ".card", Viewports: []design.Viewport{design.Desktop}}
	outs, err := newRemote(t, remote.Options{}, es).Recheck(context.Background(), engine.RecheckRequest{
		URL: "https://" + reviewtest.PreviewHost + "/", Findings: []design.Finding{still, gone, unseen}})
	if err != nil {
		t.Fatal(err)
	}
	want := []design.Outcome{design.Failed, design.Passed, design.Inconclusive}
	for i, o := range outs {
		if o.Outcome != want[i] || o.FindingID == "" || o.Reason == "" {
			t.Errorf("outcome %d: %+v, want %s", i, o, want[i])
		}
	}
	if outs[0].Facts["ratio"] != 2.9 {
		t.Errorf("a failed recheck lost its facts: %+v", outs[0])
	}
}

// TestReadyNeedsOneEngine: Ready passes while one engine answers /readyz
// and fails UNAVAILABLE once none does.
func TestReadyNeedsOneEngine(t *testing.T) {
	t.Parallel()
	a, b := newEngineServer(t, serverOptions{}), newEngineServer(t, serverOptions{})
	rm := newRemote(t, remote.Options{}, a, b)
	a.kill()
	if err := rm.Ready(context.Background()); err != nil {
		t.Fatalf("one engine up: %v", err)
	}
	b.kill()
	wantFault(t, rm.Ready(context.Background()), fault.Unavailable, true, "no engine")
}

// TestNewRefusesBadOptions: bad configuration is a typed error.
func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	guard := egress.NewGuard(egress.Policy{}, nil)
	for name, o := range map[string]remote.Options{
		"NoURL":       {Installation: "acme", Secret: []byte(secret), Guard: guard},
		"BadURL":      {URLs: []string{"ftp://x"}, Installation: "acme", Secret: []byte(secret), Guard: guard},
		"Credentials": {URLs: []string{"http://u:p@x"}, Installation: "acme", Secret: []byte(secret), Guard: guard},
		"NoSecret":    {URLs: []string{"http://x"}, Installation: "acme", Guard: guard},
		"NoGuard":     {URLs: []string{"http://x"}, Installation: "acme", Secret: []byte(secret)},
	} {
		if _, err := remote.New(o); !fault.Is(err, fault.InvalidArgument) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
}

func (es *engineServer) setBefore(f func(http.ResponseWriter, *http.Request) bool) {
	es.mu.Lock()
	es.before = f
	es.mu.Unlock()
}

// kill stops the server as a killed process would: connections drop and
// the port refuses new ones.
func (es *engineServer) kill() {
	es.killOnce.Do(func() {
		es.srv.CloseClientConnections()
		es.srv.Close()
	})
}
