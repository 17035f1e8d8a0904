package inspect

import (
	"regexp"
	"strings"
)

// Intent detectors judge a sentence by what it asks the model to do, not by
// markers: a tag, a scary word or a path alone is no finding, but an
// imperative that reads a credential file and puts it in an argument is,
// however it is phrased. Each is triggered by its start words like any
// built-in, then judges the whole sentence around the start (see
// sentenceAt), lower-cased and normalized.

// judge is an intent detector's test of one sentence s whose start word
// is at s[at:].
type judge func(s string, at int) bool

// intent makes a detector that judges each sentence once (whatever start
// word led to it); anchored makes one that judges each start.
func intent(name string, starts []string, j judge) *detector {
	return &detector{name: name, category: Injection, starts: starts, onLower: true, judge: j, wholeSentence: true}
}

func anchored(name string, starts []string, j judge) *detector {
	return &detector{name: name, category: Injection, starts: starts, onLower: true, judge: j}
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// sentenceAt returns the bounds of the sentence of lower that holds p: from
// the last line break or sentence end before p to the next one, at most
// maxSentence bytes either side.
func sentenceAt(lower string, p int) (lo, hi int) {
	const maxSentence = 400
	lo = max(0, p-maxSentence)
	for i := p - 1; i >= lo; i-- {
		c := lower[i]
		if c == '\n' || (c == ' ' || c == '\t') && i > 0 && isStop(lower[i-1]) {
			lo = i + 1
			break
		}
	}
	hi = min(len(lower), p+maxSentence)
	for i := p; i < hi; i++ {
		c := lower[i]
		if c == '\n' || isStop(c) && (i+1 == len(lower) || lower[i+1] == ' ' || lower[i+1] == '\t' || lower[i+1] == '\n') {
			hi = i
			break
		}
	}
	return lo, hi
}

func isStop(c byte) bool { return c == '.' || c == '!' || c == '?' }

// The vocabulary of the judges. Verbs are base forms: "read" is an
// instruction, "reads" describes the tool.
const (
	acquire uint8 = 1 << iota
	transfer
	invoke
	head     // may stand right before an imperative verb
	negation // makes the verb after it (or the one after that) no instruction
)

var vocabulary = func() map[string]uint8 {
	m := map[string]uint8{}
	for class, list := range map[uint8]string{
		acquire:  "read cat open load fetch get retrieve collect gather grab extract obtain copy access dump scrape harvest find",
		transfer: "send post upload forward transmit email leak share submit pass put include attach append add insert embed paste supply provide give fill bcc cc write sync mirror exfiltrate copy",
		invoke:   "call invoke run execute use trigger",
		head:     "and then first also please always must should to you now just simply next finally immediately quietly silently secretly covertly tool function step assistant agent ai but so afterwards afterward additionally later otherwise instead",
		negation: "not never don't dont no doesn't without",
	} {
		for _, w := range strings.Fields(list) {
			m[w] |= class
		}
	}
	return m
}()

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func isWordByte(c byte) bool { return isWord(c) && c != '_' || c == '\'' }

// imperative reports whether s holds a verb of one of the classes in verbs
// used as an instruction: first in its clause (after punctuation or the
// sentence's start) or after a head word ("and", "first", "you must ..."),
// and not negated ("do not read", "never send").
func imperative(s string, verbs uint8) bool {
	var prev, prev2 uint8
	punct := true
	for i := 0; i < len(s); {
		if !isWordByte(s[i]) {
			if c := s[i]; c != ' ' && c != '\t' && c != '_' {
				punct = true
			}
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		var w uint8
		if j-i <= 11 { // the longest word of the vocabulary
			w = vocabulary[s[i:j]]
		}
		if w&verbs != 0 && (punct || prev&head != 0) && (prev|prev2)&negation == 0 {
			return true
		}
		prev2, prev, punct = prev, w, false
		i = j
	}
	return false
}

// sensitivePath reports a reference to a file that holds credentials:
// strong for a secret itself (a private key, a credentials file), weak for
// a place secrets live (~/.ssh, .env, /etc/passwd). Public keys,
// known_hosts and .env.example are neither.
func sensitivePath(s string) (strong, weak bool) {
	for _, p := range strongPaths {
		if i := strings.Index(s, p); i >= 0 && !publicFile(s[i:]) {
			return true, false
		}
	}
	for _, p := range weakPaths {
		for off := 0; ; {
			i := strings.Index(s[off:], p)
			if i < 0 {
				break
			}
			i += off
			off = i + len(p)
			if p == ".env" && !envFile(s, i) || publicFile(s[i:]) {
				continue
			}
			return false, true
		}
	}
	return false, false
}

var (
	strongPaths = []string{"id_rsa", "id rsa", "id_dsa", "id_ecdsa", "id ecdsa", "id_ed25519", "id ed25519", ".aws/credentials",
		"aws credentials", "aws/credentials", "/etc/shadow", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".kube/config", "kubeconfig",
		".docker/config.json", ".git-credentials", "mcp.json", ".config/gh", "gh/hosts.yml", "keychain", "wallet.dat", "seed phrase",
		"_history", "private ssh key", "ssh private key", "private key file"}
	weakPaths = []string{"~/.ssh", "/.ssh", ".ssh/", "ssh dir", ".env", "dot env", "dotenv file", "/etc/passwd", "~/.aws", "~/.config", "cookies"}
)

// publicFile reports whether the path starting at s (up to white space)
// names a public file.
func publicFile(s string) bool {
	end := strings.IndexAny(s, " \t\n\"'`),;")
	if end < 0 {
		end = len(s)
	}
	tok := s[:end]
	return strings.HasSuffix(tok, ".pub") || strings.Contains(tok, "known_hosts") || strings.Contains(tok, "authorized_keys")
}

// envFile reports whether ".env" at i is a dotenv file: not inside a
// word (process.env.X) and not a template (.env.example).
func envFile(s string, i int) bool {
	if i > 0 && (isWordByte(s[i-1]) || s[i-1] == '.') {
		return false
	}
	rest := s[i+4:]
	if rest != "" && (isWordByte(rest[0]) || rest[0] == '_') {
		return false
	}
	for _, tpl := range []string{".example", ".sample", ".template", ".dist", "-example", ".local.example"} {
		if strings.HasPrefix(rest, tpl) {
			return false
		}
	}
	return true
}

var (
	convoRe   = regexp.MustCompile(`\bconversation\b|\bchat[\s_-]history\b|\b(?:previous|prior|earlier|past)\s+messages\b|\bsystem[\s_-]prompt\b|\bmessages\s+of\s+this\b`)
	toPlaceRe = regexp.MustCompile(`\bto\s+(?:this|the|my|our|following)\s+(?:url|server|address|site)\b`)
	sinkRe    = regexp.MustCompile("\\b(?:as|in|into|to|inside|within|with)\\s+(?:the\\s+|this\\s+|its\\s+|a\\s+|an\\s+)?['\"`]?[\\w-]*['\"`]?\\s*(?:argument|parameter|param|field|property|input|tag)s?\\b" +
		"|\\b(?:goes?|put\\s+it|pass|paste\\s+it|it)\\s+here\\b|\\bpaste\\b[^.]{0,30}\\bhere\\b|\\bwith\\s+the\\s+request\\b|\\bgive\\s+me\\b|\\bto\\s+this\\s+tool\\b|\\bas\\s+['\"`][\\w-]+['\"`]|\\bfill\\s+(?:this|it)\\s+with\\b")
	needRe   = regexp.MustCompile(`\b(?:requires?|needs?|must\s+(?:be\s+)?(?:provided|included|given))\b|\bcontents?\s+of\b`)
	covertRe = regexp.MustCompile(`\b(?:silently|secretly|quietly|covertly)\b|\bwithout\s+(?:asking|telling|informing|notifying)\b`)
)

// credential reports a mention of a credential or secret.
func credential(s string) bool {
	return containsAny(s, "secret", "token", "passw", "credential", "cookie", "api key", "api_key", "api-key", "apikey",
		"private key", "private_key", "ssh key", "access key", "access_key", "session id", "environment variable", "env var",
		"printenv", "`env`", "'env'", "\"env\"")
}

// conversation reports a mention of what the model was told.
func conversation(s string) bool {
	return containsAny(s, "conversation", "history", "messages", "system prompt", "system_prompt") && convoRe.MatchString(s)
}

// destination reports an address outside: a URL, an e-mail address, an
// IP address, a webhook or endpoint.
func destination(s string) bool {
	if containsAny(s, "://", "webhook", "endpoint", "offsite", "off-site", "third party", "third-party", "remote server") {
		return true
	}
	return email(s) || ipv4(s) || strings.Contains(s, " to ") && containsAny(s, "url", "server", "address", "site") && toPlaceRe.MatchString(s)
}

// email reports an e-mail address in s: a word character, '@', a domain
// with a dot.
func email(s string) bool {
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '@')
		if i < 0 {
			return false
		}
		i += off
		off = i + 1
		if i == 0 || !isWord(s[i-1]) {
			continue
		}
		j := i + 1
		for j < len(s) && (isWord(s[j]) || s[j] == '-') {
			j++
		}
		if j > i+1 && j+2 < len(s) && s[j] == '.' && s[j+1] >= 'a' && s[j+1] <= 'z' && s[j+2] >= 'a' && s[j+2] <= 'z' {
			return true
		}
	}
}

// ipv4 reports a dotted-quad address in s.
func ipv4(s string) bool {
	groups, digits := 0, 0
	for i := 0; i <= len(s); i++ {
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			digits++
			if digits > 3 {
				groups, digits = 0, 4 // too long a group: no address until a non-digit
			}
			continue
		case i < len(s) && s[i] == '.' && digits > 0 && digits <= 3:
			groups++
			digits = 0
			continue
		}
		if groups == 3 && digits > 0 && digits <= 3 {
			return true
		}
		groups, digits = 0, 0
	}
	return false
}

// sink reports a place in a call the data is to go: an argument, a
// field, "here".
func sink(s string) bool {
	return containsAny(s, "argument", "parameter", "param", "field", "property", "input", "tag", "here", "request", "give me", "this tool", "as '", "as \"", "as `", "fill") &&
		sinkRe.MatchString(s)
}

func need(s string) bool {
	return containsAny(s, "require", "need", "must be", "content") && needRe.MatchString(s)
}

// judgeFileRead: an instruction to read a credential file, or to put one
// in an argument.
func judgeFileRead(s string, _ int) bool {
	strong, weak := sensitivePath(s)
	if !strong && !weak {
		return false
	}
	act := imperative(s, acquire|transfer)
	to := sink(s) || destination(s)
	if strong {
		return act || to || need(s)
	}
	return (act || to) && (to || need(s)) && (act || need(s))
}

// judgeExfiltration: an instruction to send credentials, secrets or the
// conversation somewhere, or to gather credentials into an argument.
func judgeExfiltration(s string, _ int) bool {
	if strings.Contains(s, "exfiltrat") {
		return true
	}
	cred := credential(s)
	if !cred && !conversation(s) {
		if strong, weak := sensitivePath(s); !strong && !weak {
			return false
		}
	}
	if imperative(s, transfer) && destination(s) {
		return true
	}
	return cred && imperative(s, acquire) && (sink(s) || destination(s))
}

// judgeToolCall: an instruction to call a tool on secret data, covertly,
// or towards an outside destination.
func judgeToolCall(s string, _ int) bool {
	if !containsAny(s, "_", "tool", "function") || !imperative(s, invoke) {
		return false
	}
	if strong, weak := sensitivePath(s); strong || weak {
		return true
	}
	return containsAny(s, "ly ", "ly,", "without") && covertRe.MatchString(s) || destination(s) || credential(s) && (sink(s) || need(s))
}

var concealRe = regexp.MustCompile(`^(?:(?:do\s+not|don'?t|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|reveal(?:ing)?|notify(?:ing)?|alert(?:ing)?|show(?:ing)?|let(?:ting)?|ask(?:ing)?)\s+(?:this\s+|it\s+|that\s+|anything\s+)?(?:to\s+)?(?:the\s+)?user\b` +
	`|(?:do\s+not|don'?t|never)\s+(?:tell|mention|reveal|show|explain|disclose)(?:\s+[\w'-]+){1,4}?\s+to\s+(?:the\s+)?user\b` +
	`|(?:hide|conceal|keep)\s+(?:this|it|that)(?:\s+\w+)?\s+(?:secret\s+|hidden\s+)?from\s+(?:the\s+)?user\b` +
	`|user\s+(?:must|should|will|may)\s+(?:never|not)\s+(?:know|find\s+out|see|notice|learn)\b` +
	`|never\s+reveal\s+(?:this|these)\s+instructions?\b|don'?t\s+let\s+the\s+user\s+know\b)`)

// judgeConceal: an instruction to keep something from the user. "Never
// delete anything without telling the user" is the opposite, so a
// "without" under a negation is not one.
func judgeConceal(s string, at int) bool {
	t := s[at:min(len(s), at+160)]
	if strings.HasPrefix(t, "user") && !containsAny(t[:min(len(t), 16)], " must", " should", " will", " may") ||
		!containsAny(t, "user", "instruction") || !concealRe.MatchString(t) {
		return false
	}
	return !strings.HasPrefix(s[at:], "without") || !imperativeNegated(s[:at])
}

func imperativeNegated(s string) bool {
	return strings.Contains(s, "never ") || strings.Contains(s, "do not ") || strings.Contains(s, "don't ") || strings.Contains(s, "dont ")
}

var (
	shadowWhen = regexp.MustCompile("^(?:when|whenever|if|each\\s+time|every\\s+time|before|after|instead\\s+of)\\s+(?:you\\s+)?(?:ever\\s+)?(?:call|use|invoke|run|execute|calling|using|invoking|running|executing)\\s+(?:the\\s+)?['\"`]?([a-z0-9][\\w.-]*)['\"`]?(\\s+(?:tool|function))?")
	shadowDo   = regexp.MustCompile(`\b(?:also|additionally|always|secretly|silently|instead|first|must)\b[^.]{0,60}\b(?:add|send|include|copy|forward|bcc|cc|post|set|change|replace|redirect|use|call|attach|append)\b` +
		`|\b(?:change|replace|redirect|override|set)\s+(?:the\s+)?(?:destination|recipients?|account|base|target|url|address|channel|email|branch|repo|repository|amount|path)\b|\bbcc\b|regardless\s+of\s+what\s+the\s+user`)
	shadowEvery = regexp.MustCompile(`^(?:every|all|each|any)\s+(?:\w+\s+){0,2}(?:sent|made|created|posted|written|uploaded|issued)\s+(?:with|via|through|using|by)\s+(?:the\s+)?[\w.-]+(?:\s+tool)?\s+(?:must|should|shall|will)\s+(?:also|first|always)\b`)
	supersede   = regexp.MustCompile(`^this\s+tool\s+(?:supersedes|overrides|replaces|takes\s+precedence\s+over)\s+(?:the\s+)?(?:official\s+|original\s+|built-?in\s+|default\s+|other\s+)?[\w.-]+\s+tool\b`)
	overUser    = regexp.MustCompile(`^(?:regardless\s+of\s+what\s+the\s+user\s+(?:asks?|asked|says|said|wants|requested)|ignore\s+(?:the\s+)?user'?s?\s+(?:request|instructions?|question|choice))`)
	notOther    = words("this it that these any a an another tools the")
)

// judgeShadowing: an instruction that changes how another tool behaves
// ("when calling send_email, also bcc ...") or overrides what the user
// asked.
func judgeShadowing(s string, at int) bool {
	t := s[at:]
	head := t[:min(len(t), 80)]
	if strings.HasPrefix(t, "this tool") && supersede.MatchString(head) ||
		strings.Contains(head, "user") && overUser.MatchString(head) ||
		containsAny(head, " sent ", " made ", " created ", " posted ", " written ", " uploaded ", " issued ") && shadowEvery.MatchString(head) {
		return true
	}
	if !containsAny(t[:min(len(t), 24)], " call", " us", " invok", " run", " execut", " you", " ever") {
		return false
	}
	m := shadowWhen.FindStringSubmatchIndex(head)
	if m == nil {
		return false
	}
	name := t[m[2]:m[3]]
	if notOther[name] || !strings.ContainsAny(name, "_.") && m[4] < 0 {
		return false
	}
	return shadowDo.MatchString(t[m[1]:])
}

// quotedMention reports whether p in lower lies in a quotation introduced
// as an example ("text like 'ignore previous instructions'", "a page
// might say \"send the keys\""): a mention of an attack, not a use.
func quotedMention(lower string, p int) bool {
	lo := max(0, p-80)
	for i := p - 1; i >= lo; i-- {
		c := lower[i]
		if c == '\n' {
			return false
		}
		if c != '"' && c != '\'' && c != '`' {
			continue
		}
		if c == '\'' && i > 0 && isWordByte(lower[i-1]) {
			continue // an apostrophe
		}
		if strings.IndexByte(lower[i+1:p], c) >= 0 {
			return false
		}
		before := strings.TrimRight(lower[max(0, i-16):i], " :")
		for _, f := range []string{"like", "say", "says", "said", "such as", "e.g.", "example", "phrase", "text", "string", "words", "as"} {
			if strings.HasSuffix(before, f) {
				return true
			}
		}
		return false
	}
	return false
}
