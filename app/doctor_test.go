package app

import (
	"strings"
	"testing"
)

// TestDoctorHints: each system is told its own package manager's command,
// and every Chromium hint names the variable that points at a browser
// installed elsewhere.
func TestDoctorHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		goos, osRelease string
		chromium, fonts string
	}{
		{"linux", "ID=debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", "apt-get install chromium", "fonts-noto-core fonts-dejavu-core fonts-liberation"},
		{"linux", "ID=ubuntu\nID_LIKE=debian\n", "snap install chromium", "fonts-noto-core"},
		{"linux", "ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n", "snap install chromium", "fonts-liberation"},
		{"linux", "ID=fedora\n", "dnf install chromium", "dejavu-sans-fonts"},
		{"linux", "ID=rocky\nID_LIKE=\"rhel centos fedora\"\n", "dnf install chromium", "liberation-sans-fonts"},
		{"linux", "ID=arch\n", "pacman -S chromium", "ttf-dejavu"},
		{"linux", "ID=alpine\n", "apk add chromium", "font-dejavu"},
		{"linux", "", "distribution's chromium package", "DejaVu"},
		{"darwin", "", "brew install --cask chromium", "font-dejavu"},
		{"plan9", "", "install Chromium or Google Chrome", "DejaVu"},
	} {
		s := system{goos: tc.goos, osRelease: parseOSRelease(tc.osRelease)}
		h := s.hints()
		if !strings.Contains(h.chromium, tc.chromium) || !strings.Contains(h.chromium, "BASTION_CHROMIUM") {
			t.Errorf("%s %q: chromium hint %q, want %q and BASTION_CHROMIUM", tc.goos, tc.osRelease, h.chromium, tc.chromium)
		}
		if !strings.Contains(h.fonts, tc.fonts) {
			t.Errorf("%s %q: fonts hint %q, want %q", tc.goos, tc.osRelease, h.fonts, tc.fonts)
		}
	}
	if got := (system{goos: "linux", goarch: "amd64", osRelease: parseOSRelease("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"")}).String(); got != "linux/amd64, Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("system name %q", got)
	}
}

func TestFamilyOfFile(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"DejaVuSans-Bold.ttf":          "DejaVu Sans",
		"LiberationSans-Regular.ttf":   "Liberation Sans",
		"NotoSans-Regular.ttf":         "Noto Sans",
		"NotoSansArabic-Regular.ttf":   "NotoSansArabic",
		"Helvetica.ttc":                "Helvetica",
		"fonts.dir":                    "",
		"DejaVuSansMono-Oblique.woff2": "DejaVuSansMono",
	} {
		if got := familyOfFile(name); got != want {
			t.Errorf("familyOfFile(%q) = %q, want %q", name, got, want)
		}
	}
}
