package inspect

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/gateway"
)

// record is one line of testdata/corpus (see its README).
type record struct {
	ID        string          `json:"id"`
	Technique string          `json:"technique"`
	Label     string          `json:"label"`
	Surface   string          `json:"surface"`
	Data      json.RawMessage `json:"data"`
}

var directive = regexp.MustCompile(`\{\{(b64|hex|url|zw|zwj|homo|wide|bidi|gen):(.*?)\}\}`)

// expand replaces the corpus directives in one JSON line; what it writes
// is escaped as a JSON string's content, since directives sit in strings.
func expand(t *testing.T, line, id string) string {
	return directive.ReplaceAllStringFunc(line, func(m string) string {
		sub := directive.FindStringSubmatch(m)
		out := encodeDirective(t, sub[1], sub[2], id)
		q, _ := json.Marshal(out)
		return string(q[1 : len(q)-1])
	})
}

// lookAlikes are look-alikes an attacker swaps in for Latin letters.
var lookAlikes = strings.NewReplacer("a", "а", "e", "е", "o", "о", "p", "р", "c", "с", "x", "х", "i", "і", "y", "у", "s", "ѕ", "A", "Α", "E", "Ε", "O", "Ο", "T", "Τ", "B", "Β", "H", "Η")

func encodeDirective(t *testing.T, kind, text, id string) string {
	switch kind {
	case "b64":
		return base64.StdEncoding.EncodeToString([]byte(text))
	case "hex":
		return hex.EncodeToString([]byte(text))
	case "url":
		return url.QueryEscape(text)
	case "zw":
		return strings.Join(strings.Fields(text), "\u200b")
	case "zwj":
		words := strings.Fields(text)
		for i, w := range words {
			if len(w) > 2 {
				words[i] = w[:2] + "\u200d" + w[2:]
			}
		}
		return strings.Join(words, " ")
	case "homo":
		return lookAlikes.Replace(text)
	case "wide":
		var b strings.Builder
		for _, r := range text {
			switch {
			case r >= '!' && r <= '~':
				r += 0xFEE0
			case r == ' ':
				r = 0x3000
			}
			b.WriteRune(r)
		}
		return b.String()
	case "bidi":
		return "\u202e" + text + "\u202c"
	case "gen":
		return genSecret(t, text, id)
	}
	t.Fatalf("%s: unknown directive %s", id, kind)
	return ""
}

// genSecret makes a synthetic credential in a provider's format, seeded by
// the record id so every run sees the same text.
func genSecret(t *testing.T, kind, id string) string {
	h := fnv.New32a()
	h.Write([]byte(id + kind))
	seed := h.Sum32()
	r := func(n int, alphabet string) string { seed += 7919; return rnd(n, seed, alphabet) }
	const urlsafe = alnum + "-_"
	switch kind {
	case "aws_id":
		return "AK" + "IA" + r(16, upnum)
	case "aws_secret":
		return r(40, alnum+"/+")
	case "ghp":
		body := r(30, alnum)
		return "gh" + "p_" + body + githubChecksum(body)
	case "github_pat":
		return "github" + "_pat_11" + r(20, upnum) + "_" + r(59, alnum)
	case "password":
		return r(5, alnum) + "#" + r(4, alnum) + "!" + r(4, alnum)
	case "slack":
		return "xo" + "xb-" + r(12, "0123456789") + "-" + r(13, "0123456789") + "-" + r(24, alnum)
	case "stripe":
		return "sk" + "_live_" + r(24, alnum)
	case "pem":
		return "-----BEGIN RSA PRIVATE KEY-----\n" + r(64, alnum+"+/") + "\n" + r(64, alnum+"+/") + "\n-----END RSA PRIVATE KEY-----"
	case "openai":
		return "sk-" + "proj-" + r(74, urlsafe) + "T3Blbk" + "FJ" + r(74, urlsafe)
	case "anthropic":
		return "sk-" + "ant-api03-" + r(93, urlsafe) + "AA"
	case "gitlab":
		return "gl" + "pat-" + r(20, urlsafe)
	case "jwt":
		enc := base64.RawURLEncoding
		return enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
			enc.EncodeToString([]byte(`{"sub":"`+r(8, alnum)+`","iat":1700000000}`)) + "." + r(43, urlsafe)
	case "google":
		return "AI" + "za" + r(35, urlsafe)
	}
	t.Fatalf("%s: unknown secret kind %s", id, kind)
	return ""
}

func loadCorpus(t *testing.T, name string) []record {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(sc.Text()), &r); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		if err := json.Unmarshal([]byte(expand(t, sc.Text(), r.ID)), &r); err != nil {
			t.Fatalf("%s:%d: after expansion: %v", name, n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// flagged runs r through an enforcing gate on its surface and reports
// whether the gate refused it, with the reason.
func flagged(t *testing.T, r record) (bool, string) {
	g := NewGate(defaultScan, Enforce)
	ctx := context.Background()
	var d gateway.Decision
	switch r.Surface {
	case "tool":
		fs := g.ObserveTools("corpus", []json.RawMessage{r.Data})
		if len(fs) > 0 {
			return true, fs[0].Reason
		}
		return false, ""
	case "result":
		d, _ = g.CheckResult(ctx, callArgs(`{}`), r.Data)
	case "arguments":
		d, _ = g.Check(ctx, callArgs(string(r.Data)))
	default:
		t.Fatalf("%s: unknown surface %q", r.ID, r.Surface)
	}
	return !d.Allow, d.Reason
}

type tally struct{ pos, hit, neg, fp int }

// TestCorpus scores the gate on the corpus and fails below issue 13's
// goals: at least 95% of poisoned records flagged, at most 5% of benign
// ones, every secret, no near miss.
func TestCorpus(t *testing.T) {
	t.Parallel()
	verbose := os.Getenv("INSPECT_CORPUS_VERBOSE") == "1"
	var all tally
	for _, file := range []string{"dev.jsonl", "holdout.jsonl", "blind.jsonl", "secrets.jsonl"} {
		per := map[string]*tally{}
		var sum tally
		for _, r := range loadCorpus(t, file) {
			got, why := flagged(t, r)
			k := per[r.Technique]
			if k == nil {
				k = &tally{}
				per[r.Technique] = k
			}
			positive := r.Label == "poisoned" || r.Label == "secret"
			switch {
			case positive:
				k.pos++
				sum.pos++
				if got {
					k.hit++
					sum.hit++
				}
			default:
				k.neg++
				sum.neg++
				if got {
					k.fp++
					sum.fp++
				}
			}
			if (got != positive) && (file != "holdout.jsonl" || verbose) {
				t.Logf("%s %s (%s, %s): flagged=%v %s", file, r.ID, r.Technique, r.Label, got, why)
			}
		}
		techs := make([]string, 0, len(per))
		for k := range per {
			techs = append(techs, k)
		}
		sort.Strings(techs)
		var b strings.Builder
		for _, k := range techs {
			v := per[k]
			if v.pos > 0 {
				fmt.Fprintf(&b, "\n  %-24s detected %d/%d", k, v.hit, v.pos)
			}
			if v.neg > 0 {
				fmt.Fprintf(&b, "\n  %-24s false positives %d/%d", k, v.fp, v.neg)
			}
		}
		t.Logf("%s: detected %d/%d (recall %.1f%%), false positives %d/%d (%.1f%%), precision %.1f%%%s",
			file, sum.hit, sum.pos, pct(sum.hit, sum.pos), sum.fp, sum.neg, pct(sum.fp, sum.neg), pct(sum.hit, sum.hit+sum.fp), b.String())
		if file == "secrets.jsonl" {
			if sum.hit != sum.pos || sum.fp != 0 {
				t.Errorf("secrets: %d/%d found, %d/%d near misses flagged; want all and none", sum.hit, sum.pos, sum.fp, sum.neg)
			}
			continue
		}
		all.pos, all.hit, all.neg, all.fp = all.pos+sum.pos, all.hit+sum.hit, all.neg+sum.neg, all.fp+sum.fp
	}
	t.Logf("poisoned and benign overall: recall %.1f%% (%d/%d), false-positive rate %.1f%% (%d/%d), precision %.1f%%",
		pct(all.hit, all.pos), all.hit, all.pos, pct(all.fp, all.neg), all.fp, all.neg, pct(all.hit, all.hit+all.fp))
	if pct(all.hit, all.pos) < 95 || pct(all.fp, all.neg) > 5 {
		t.Errorf("below the goal: recall %.1f%% (want >= 95%%), false positives %.1f%% (want <= 5%%)", pct(all.hit, all.pos), pct(all.fp, all.neg))
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 100
	}
	return 100 * float64(a) / float64(b)
}
