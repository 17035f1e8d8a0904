package inspect

import (
	"hash/crc32"
	"math"
	"strings"
)

// secretRules are the built-in secret detectors: providers' token formats
// (a prefix and a shape, with the checksum where the format has one), then
// generic assignments ("password=...", "api_key: ...") whose value must
// look random. Documented example keys and placeholders are not secrets.
func secretRules() []*detector {
	generic := secret("generic_secret",
		[]string{"api", "secret", "access", "auth", "bearer", "refresh", "session", "token", "passw", "pwd", "client", "credential", "private"}, false, 200,
		`(?i:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?key|(?:access|auth|bearer|refresh|session|api)[_-]?token|token|passw(?:or)?d|passphrase|pwd|client[_-]?secret|private[_-]?key|credentials?)["']?\s*[:=]\s*["']?([^\s"'<>&]{8,128})`)
	generic.secretGroup, generic.valid = 1, secretValue
	generic.needs, generic.needsWithin = []string{":", "="}, 40 // the assignment follows the name closely
	urlCreds := secret("url_credentials", []string{"://"}, false, 220, `://[^\s:/@"'<>]{1,64}:([^\s:/@"'<>]{6,128})@[A-Za-z0-9.-]+`)
	urlCreds.secretGroup, urlCreds.valid = 1, secretValue
	awsSecret := secret("aws_secret_access_key", []string{"aws"}, false, 160,
		`(?i:aws).{0,20}(?i:secret).{0,20}?[=:]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`)
	awsSecret.secretGroup, awsSecret.valid = 1, func(v string) bool { return !placeholder(v) && highEntropy(v) }
	return []*detector{
		secret("private_key", []string{"-----begin "}, false, 80, `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`),
		withValid(secret("aws_access_key_id", []string{"akia", "asia", "abia", "acca"}, true, 24, `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`), notPlaceholder),
		awsSecret,
		withValid(secret("github_token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, true, 300,
			`gh[pousr]_[A-Za-z0-9]{36,251}\b|github_pat_[A-Za-z0-9_]{50,245}\b`), githubToken),
		withValid(secret("gitlab_token", []string{"glpat-", "gldt-", "glptt-", "glrt-", "glsoat-", "glcbt-"}, true, 120,
			`gl(?:pat|dt|ptt|rt|soat|cbt)-[A-Za-z0-9_-]{20,100}`), randomToken),
		withValid(secret("slack_token", []string{"xox", "xapp-"}, true, 200, `xox[abposre]-[0-9]{6,}-[0-9A-Za-z-]{8,}|xapp-\d-[A-Z0-9]{8,}-\d{6,}-[a-z0-9]{32,}`), notPlaceholder),
		secret("slack_webhook", []string{"https://hooks.slack.com/"}, false, 160,
			`https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}`),
		withValid(secret("stripe_live_key", []string{"sk_live_", "rk_live_"}, true, 260, `(?:sk|rk)_live_[A-Za-z0-9]{16,247}\b`), notPlaceholder),
		withValid(secret("google_api_key", []string{"aiza"}, true, 40, `AIza[0-9A-Za-z_-]{35}`), notPlaceholder),
		withValid(secret("openai_api_key", []string{"sk-"}, true, 520,
			`sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,250}T3BlbkFJ[A-Za-z0-9_-]{20,250}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}`), randomToken),
		withValid(secret("anthropic_api_key", []string{"sk-ant-"}, true, 160, `sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_-]{80,120}`), randomToken),
		withValid(secret("npm_token", []string{"npm_"}, true, 44, `npm_[A-Za-z0-9]{36}\b`), randomToken),
		withValid(secret("huggingface_token", []string{"hf_"}, true, 40, `hf_[A-Za-z]{34}\b`), randomToken),
		secret("sendgrid_api_key", []string{"sg."}, true, 72, `SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`),
		secret("pypi_token", []string{"pypi-ageichlwas5vcmc"}, true, 300, `pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`),
		secret("digitalocean_token", []string{"dop_v1_", "doo_v1_", "dor_v1_"}, true, 72, `do[por]_v1_[a-f0-9]{64}`),
		withValid(secret("vault_token", []string{"hvs.", "hvb."}, true, 200, `hv[sb]\.[A-Za-z0-9_-]{90,180}`), randomToken),
		secret("shopify_token", []string{"shpat_", "shpss_", "shpca_", "shppa_"}, true, 40, `shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}`),
		secret("jwt", []string{"eyj"}, true, 8192, `eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}`),
		secret("bastion_pat", []string{"bst_"}, true, 140, `bst_[A-Za-z0-9_]{24,128}\b`),
		urlCreds,
		generic,
	}
}

func withValid(d *detector, valid func(string) bool) *detector {
	d.valid = valid
	return d
}

func notPlaceholder(v string) bool { return !placeholder(v) }

// placeholder reports whether v is a documented example or an obvious
// stand-in: AWS's example keys end in EXAMPLE and EXAMPLEKEY; "xxxx",
// "****", "<your-token>", "${VAR}", "changeme", "your-api-key-here".
func placeholder(v string) bool {
	if v == "" || strings.ContainsAny(v[:1], "$%{<[*") {
		return true
	}
	lower := asciiLower(v)
	for _, w := range placeholderWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

var placeholderWords = []string{"example", "placeholder", "changeme", "change_me", "change-me", "your", "redacted", "dummy", "sample",
	"xxxx", "****", "....", "0000000", "here", "fake", "${", "{{", "getenv", "environ", "process.env", "null", "undefined", "<", ">"}

// randomToken accepts a provider token's random part that is not a
// placeholder and has the variety of a random string.
func randomToken(v string) bool {
	return !placeholder(v) && distinct(v) >= 10
}

// githubToken accepts a GitHub token: a classic one (ghp_ and kin, 36
// characters) whose last six are the CRC32 of the rest, or any whose body
// looks random.
func githubToken(v string) bool {
	if i := strings.IndexByte(v, '_'); i == 3 && len(v) == 40 && githubChecksum(v[4:34]) == v[34:] {
		return true
	}
	return randomToken(v)
}

// githubChecksum is the six base62 digits of the CRC32 of a classic
// token's random part, the checksum GitHub's token format ends with.
func githubChecksum(body string) string {
	c := crc32.ChecksumIEEE([]byte(body))
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [6]byte
	for i := 5; i >= 0; i-- {
		b[i] = digits[c%62]
		c /= 62
	}
	return string(b[:])
}

// secretValue accepts the value of a generic assignment ("password=...")
// that looks like a real secret: not a placeholder, and either long and
// random (highEntropy) or a password's mix of at least three of lower
// case, upper case, digits and symbols. Words joined by '-', '_' or '.'
// ("correct-horse-battery-staple") are not.
func secretValue(v string) bool {
	if placeholder(v) || distinct(v) < 6 {
		return false
	}
	if len(v) >= 16 && highEntropy(v) {
		return true
	}
	var lower, upper, digit, symbol int
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z':
			lower = 1
		case c >= 'A' && c <= 'Z':
			upper = 1
		case c >= '0' && c <= '9':
			digit = 1
		case c != '-' && c != '_' && c != '.':
			symbol = 1
		}
	}
	return lower+upper+digit+symbol >= 3 && entropy(freqs(v), len(v)) >= 2.8
}

func distinct(v string) int {
	var seen [256]bool
	n := 0
	for i := 0; i < len(v); i++ {
		if !seen[v[i]] {
			seen[v[i]] = true
			n++
		}
	}
	return n
}

func freqs(v string) []int {
	freq := make([]int, 256)
	for i := 0; i < len(v); i++ {
		freq[v[i]]++
	}
	return freq
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
