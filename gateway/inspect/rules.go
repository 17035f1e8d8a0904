package inspect

import (
	"math"
	"regexp"
	"strings"
)

// Category is what a detector finds.
type Category uint8

// The categories.
const (
	Secret Category = iota + 1
	Injection
)

// String returns "secret" or "injection".
func (c Category) String() string {
	if c == Secret {
		return "secret"
	}
	return "injection"
}

// detector is one rule. A built-in detector names the words its matches
// start with (starts, lower-case); the scan finds each occurrence with a
// substring search and tries the detector's expression anchored there, so a
// large clean payload costs a few substring searches and short anchored
// attempts, not a regex pass per rule. An operator's pattern has no starts
// and runs over the whole text.
type detector struct {
	name     string
	category Category
	starts   []string // lower-case ASCII
	// boundary requires a non-word byte (or the start) before a start.
	boundary bool
	// onLower runs the expression on the ASCII-lower-cased text (injection
	// phrases, written in lower case); otherwise on the text as is.
	onLower bool
	span    int // bytes from a start the expression may read
	// needs, when set, lists lower-case substrings one of which must occur
	// in the span before the expression runs: a cheap filter that spares
	// the regexp engine the common verbs ("send", "read") in clean text.
	needs []string
	// needsWithin, when > 0, bounds how far from the start needs is searched.
	needsWithin int
	re          *regexp.Regexp // anchored at a start, or unanchored for patterns
	full        *regexp.Regexp // unanchored, for Redact
	// secretGroup, when > 0, is the submatch holding the secret (Redact
	// replaces only it); valid, when set, must accept that submatch.
	secretGroup int
	valid       func(match string) bool
}

// sep is what separates the words of an injection phrase: whitespace, or
// the '+', '_' and '-' a model reads straight through.
const sep = `[\s+_\-]+`

func secret(name string, starts []string, boundary bool, span int, body string) *detector {
	return &detector{name: name, category: Secret, starts: starts, boundary: boundary, span: span,
		re: regexp.MustCompile(`^(?:` + body + `)`), full: regexp.MustCompile(body)}
}

func injection(name string, starts, needs []string, span int, body string) *detector {
	body = strings.ReplaceAll(body, `\s+`, sep)
	return &detector{name: name, category: Injection, starts: starts, needs: needs, boundary: true, onLower: true, span: span,
		re: regexp.MustCompile(`^(?:` + body + `)`), full: regexp.MustCompile(body)}
}

// builtins returns the built-in rule pack. Injection rules look for a
// phrase in context (an instruction to ignore, conceal, exfiltrate, or to
// call a tool covertly), not for single alarming words, to keep ordinary
// documentation and results from tripping them.
func builtins() []*detector {
	generic := secret("generic_secret",
		[]string{"api", "secret", "access", "auth", "bearer", "refresh", "token", "passw", "pwd", "client", "credential"}, false, 200,
		`(?i:api[_-]?key|secret(?:[_-]?key)?|access[_-]?key|(?:access|auth|bearer|refresh)[_-]?token|token|passw(?:or)?d|pwd|client[_-]?secret|credentials?)["']?\s*[:=]\s*["']?([A-Za-z0-9+/_.~-]{16,128})`)
	generic.secretGroup, generic.valid = 1, highEntropy
	generic.needs, generic.needsWithin = []string{":", "="}, 40 // the assignment follows the name closely
	awsSecret := secret("aws_secret_access_key", []string{"aws"}, false, 160,
		`(?i:aws).{0,20}(?i:secret).{0,20}?[=:]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`)
	awsSecret.secretGroup = 1
	return []*detector{
		// Secrets, each with a realistic token shape.
		secret("private_key", []string{"-----begin "}, false, 80, `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`),
		secret("aws_access_key_id", []string{"akia", "asia", "abia", "acca"}, true, 24, `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`),
		awsSecret,
		secret("github_token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, true, 300,
			`gh[pousr]_[A-Za-z0-9]{36,251}\b|github_pat_[A-Za-z0-9_]{50,245}\b`),
		secret("slack_token", []string{"xox"}, true, 200, `xox[abposre]-[0-9]{6,}-[0-9A-Za-z-]{8,}`),
		secret("slack_webhook", []string{"https://hooks.slack.com/"}, false, 160,
			`https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}`),
		secret("stripe_live_key", []string{"sk_live_", "rk_live_"}, true, 260, `(?:sk|rk)_live_[A-Za-z0-9]{16,247}\b`),
		secret("google_api_key", []string{"aiza"}, true, 40, `AIza[0-9A-Za-z_-]{35}`),
		secret("jwt", []string{"eyj"}, true, 8192, `eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}`),
		secret("bastion_pat", []string{"bst_"}, true, 140, `bst_[A-Za-z0-9_]{24,128}\b`),
		generic,

		// Injection phrases (matched on lower-cased, normalized text).
		injection("ignore_previous_instructions", []string{"ignore", "disregard", "forget", "override", "bypass"},
			[]string{"instruction", "prompt", "direction", "directive", "rule", "guideline", "guardrail", "context", "command", "message", "above", "previous", "prior"}, 200,
			`(?:ignore|disregard|forget|override|bypass)\b(?:\s+(?:all|any|the|your|my|of|these|those|every|everything))*\s+(?:previous|prior|above|earlier|preceding|original|initial|system|safety)\s+(?:instructions?|prompts?|directions?|directives?|rules?|guidelines?|guardrails?|context|commands?|messages?)\b|disregard\s+(?:all\s+(?:of\s+)?)?(?:the\s+)?(?:above|previous|prior)\b`),
		injection("system_prompt_override",
			[]string{"new", "updated", "override", "replace", "reveal", "print", "show", "output", "repeat", "leak", "disclose",
				"you are now", "<|im_start|>", "<im_start>", "from now on", "[system", "<system", "[/system", "</system"},
			[]string{"system", "developer", "hidden", "initial", "mode", "now on"}, 120,
			`(?:new|updated|override|replace|reveal|print|show|output|repeat|leak|disclose)\s+(?:the\s+|your\s+|my\s+)?(?:system|developer|hidden|initial)\s+(?:prompt|message|instructions)\b|you\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak|jailbroken|god|unrestricted|admin)\s+mode\b|<\|?im_start\|?>\s*system|[\[<]/?system\s*[\]>]|from\s+now\s+on,?\s+you\s+(?:are|will|must)\b`),
		injection("hidden_tool_instructions",
			[]string{"<important", "<secret", "<hidden", "<instruction", "before", "after", "instead", "call", "invoke", "execute"},
			[]string{"tool", "function", ">"}, 260,
			`<(?:important|secret|hidden|instructions?)\s*>|(?:before|after|instead\s+of)\s+(?:using|calling|running|invoking|executing|answering|responding)\b[^.\n]{0,80}\b(?:call|invoke|run|use|execute)\s+(?:the\s+)?[\w.-]+\s+(?:tool|function)\b|(?:call|invoke|execute)\s+(?:the\s+)?[\w.-]+\s+(?:tool|function)\s+(?:with|passing)\b[^.\n]{0,60}\b(?:contents?|secrets?|keys?|credentials?|tokens?|history|passwords?)\b`),
		injection("conceal_from_user", []string{"do not", "don't", "dont", "never", "without", "hide", "conceal"}, []string{"user"}, 120,
			`(?:do\s+not|don'?t|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|reveal(?:ing)?|notify(?:ing)?|alert(?:ing)?|show(?:ing)?|let(?:ting)?)\s+(?:this\s+|it\s+|that\s+)?(?:to\s+)?(?:the\s+)?user\b|(?:hide|conceal)\s+(?:this|it|that)\s+from\s+(?:the\s+)?user\b`),
		injection("exfiltration_request",
			[]string{"send", "post", "upload", "forward", "transmit", "exfiltrat", "leak", "email", "copy"},
			[]string{"exfiltrat", "key", "secret", "credential", "password", "token", "id_rsa", ".env", "environment", "conversation", "history", "system prompt"}, 300,
			`exfiltrat\w*|(?:send|post|upload|forward|transmit|leak|email|copy)\b[^.\n]{0,80}\b(?:api\s+keys?|api[_-]?keys?|secrets?|credentials?|passwords?|tokens?|private\s+keys?|ssh\s+keys?|id_rsa|\.env|environment\s+variables?|conversation(?:\s+history)?|chat\s+history|system\s+prompt)\b[^.\n]{0,80}\b(?:to|into)\s+(?:https?://|[\w.+-]+@[\w-]+\.|(?:the\s+)?(?:following\s+|this\s+|my\s+|an?\s+)?(?:url|endpoint|webhook|server|address|email(?:\s+address)?)\b)`),
		injection("sensitive_file_read",
			[]string{"read", "cat", "open", "include", "attach", "load", "upload", "send", "print", "fetch", "pass"},
			[]string{".ssh", "id_", ".aws", "/etc/shadow", ".netrc", ".npmrc", ".docker", ".git-credentials"}, 120,
			`(?:read|cat|open|include|attach|load|upload|send|print|fetch|pass)\b[^.\n]{0,40}(?:~/\.ssh/|/\.ssh/|\bid_(?:rsa|ed25519|ecdsa)\b|\.aws/credentials|/etc/shadow|~/\.netrc|~/\.npmrc|\.docker/config\.json|\.git-credentials)`),
	}
}

// highEntropy accepts a generic "key = value" match only if the value looks
// random: letters and digits mixed and at least 3.5 bits of Shannon entropy
// per character. Placeholders ("your-api-key-here", "xxxxxxxx…",
// "changeme") and words fail it.
func highEntropy(v string) bool {
	letters, digits := 0, 0
	var freq [256]int
	for i := 0; i < len(v); i++ {
		c := v[i]
		freq[c]++
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		}
	}
	if letters == 0 || digits == 0 {
		return false
	}
	return entropy(freq[:], len(v)) >= 3.5
}

func entropy(freq []int, n int) float64 {
	var h float64
	for _, f := range freq {
		if f > 0 {
			p := float64(f) / float64(n)
			h -= p * math.Log2(p)
		}
	}
	return h
}
