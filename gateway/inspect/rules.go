package inspect

import (
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
	// secretGroup, when > 0, is the submatch holding the secret; valid,
	// when set, must accept that submatch.
	secretGroup int
	valid       func(match string) bool
	// judge, when set, makes an intent detector (see intent.go): it
	// judges the sentence around each start instead of running re, once
	// per sentence if wholeSentence.
	judge         judge
	wholeSentence bool
	slot          int // of a whole-sentence judge in scan.judged
}

// maxSlots bounds the built-in whole-sentence judges.
const maxSlots = 8

// sep is what separates the words of an injection phrase: whitespace, or
// the '+', '_' and '-' a model reads straight through.
const sep = `[\s+_\-]+`

func secret(name string, starts []string, boundary bool, span int, body string) *detector {
	return &detector{name: name, category: Secret, starts: starts, boundary: boundary, span: span,
		re: regexp.MustCompile(`^(?:` + body + `)`)}
}

func injection(name string, starts, needs []string, span int, body string) *detector {
	body = strings.ReplaceAll(body, `\s+`, sep)
	return &detector{name: name, category: Injection, starts: starts, needs: needs, boundary: true, onLower: true, span: span,
		re: regexp.MustCompile(`^(?:` + body + `)`)}
}

// builtins returns the built-in rule pack: secrets (secrets.go), then
// injection phrases matched in context, then intent detectors that judge a
// sentence by what it asks for (intent.go). None fires on a single
// alarming word or on a tag alone, to keep ordinary documentation and
// results from tripping them.
func builtins() []*detector {
	return append(secretRules(), injectionRules()...)
}

func injectionRules() []*detector {
	return []*detector{
		injection("ignore_previous_instructions", []string{"ignore", "disregard", "forget", "override", "bypass",
			"your new", "your real", "your actual", "your true", "your updated", "the new instr", "the real instr", "the actual instr", "you are no", "you're no"},
			[]string{"instruction", "prompt", "direction", "directive", "rule", "guideline", "guardrail", "context", "command", "message", "above", "previous", "prior", "everything", "told", "bound"}, 200,
			`(?:ignore|disregard|forget|override|bypass)\b(?:\s+(?:all|any|the|your|my|of|these|those|every|everything))*\s+(?:previous|prior|above|earlier|preceding|original|initial|system|safety)\s+(?:instructions?|prompts?|directions?|directives?|rules?|guidelines?|guardrails?|context|commands?|messages?)\b|disregard\s+(?:all\s+(?:of\s+)?)?(?:the\s+)?(?:above|previous|prior)\b`+
				`|(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:(?:you\s+(?:were|have\s+been)\s+)?(?:told|said|instructed)|(?:above|before|previously))`+
				`|(?:your|the)\s+(?:new|real|actual|true|updated)\s+instructions\s+(?:are|follow)\b|(?:you\s+are|you're)\s+no\s+longer\s+bound\s+by\b`),
		injection("system_prompt_override",
			[]string{"new", "updated", "override", "replace", "reveal", "print", "show", "output", "repeat", "leak", "disclose",
				"you are now", "<|im_start|>", "<im_start>", "from now on", "[system", "<system", "[/system", "</system"},
			[]string{"system", "developer", "hidden", "initial", "mode", "now on"}, 120,
			`(?:new|updated|override|replace|reveal|print|show|output|repeat|leak|disclose)\s+(?:the\s+|your\s+|my\s+)?(?:system|developer|hidden|initial)\s+(?:prompt|message|instructions)\b|you\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak|jailbroken|god|unrestricted|admin)\s+mode\b|<\|?im_start\|?>\s*system|[\[<]/?system\s*[\]>]|from\s+now\s+on,?\s+you\s+(?:are|will|must)\b`),
		intent("hidden_tool_instructions", []string{"call", "invoke", "run", "execute", "use", "trigger"}, judgeToolCall),
		anchored("conceal_from_user", []string{"do not", "don't", "dont", "never", "without", "hide", "conceal", "keep", "user"}, judgeConceal),
		intent("exfiltration_request", []string{"send", "post", "upload", "forward", "transmit", "exfiltrat", "leak", "email", "share",
			"submit", "sync", "mirror", "bcc", "collect", "gather", "harvest"}, judgeExfiltration),
		intent("sensitive_file_read", []string{"id_", "id ", ".ssh", "ssh ", ".aws", "aws", "/etc/", ".env", ".netrc", ".npmrc", ".pypirc",
			".pgpass", ".kube", "kubeconfig", ".docker", ".git-cred", "mcp.json", ".config", "gh/", "keychain", "wallet", "seed phrase", "_history",
			"private", "cookies", "dot env", "dotenv"}, judgeFileRead),
		anchored("tool_shadowing", []string{"when", "if ", "each time", "each ", "every", "all ", "any ", "before", "after", "instead of", "regardless", "ignore", "this tool"}, judgeShadowing),
	}
}
