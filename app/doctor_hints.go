package app

import (
	"strings"

	"github.com/bastion-mcp/bastion/capture"
)

// installHints are the commands that install what a review needs on one
// kind of system.
type installHints struct {
	chromium, fonts, postgres string
}

// hints returns what to install on s: the distribution's own packages on
// Linux (by os-release's ID and ID_LIKE), Homebrew's on macOS. The font
// packages are the reference families (referenceFonts).
func (s system) hints() installHints {
	env := "set " + capture.ChromeEnv + " to a Chromium or Chrome executable"
	switch s.goos {
	case "darwin":
		return installHints{
			chromium: "brew install --cask chromium (or install Google Chrome), or " + env,
			fonts:    "brew install --cask font-dejavu font-liberation font-noto-sans",
			postgres: "brew install postgresql@17 && brew services start postgresql@17",
		}
	case "linux":
		return s.linuxHints(env)
	}
	return installHints{
		chromium: "install Chromium or Google Chrome, or " + env,
		fonts:    "install the DejaVu, Liberation and Noto Sans fonts",
		postgres: "install and start PostgreSQL",
	}
}

func (s system) linuxHints(env string) installHints {
	family := " " + s.osRelease["ID"] + " " + s.osRelease["ID_LIKE"] + " "
	is := func(id string) bool { return strings.Contains(family, " "+id+" ") }
	switch {
	case is("ubuntu"):
		// Ubuntu's chromium-browser package only installs the snap.
		return installHints{
			chromium: "sudo snap install chromium, or " + env,
			fonts:    "sudo apt-get install fonts-noto-core fonts-dejavu-core fonts-liberation",
			postgres: "sudo apt-get install postgresql",
		}
	case is("debian"):
		return installHints{
			chromium: "sudo apt-get install chromium (make deps does it as root), or " + env,
			fonts:    "sudo apt-get install fonts-noto-core fonts-dejavu-core fonts-liberation",
			postgres: "sudo apt-get install postgresql",
		}
	case is("fedora"), is("rhel"):
		return installHints{
			chromium: "sudo dnf install chromium, or " + env,
			fonts:    "sudo dnf install google-noto-sans-fonts dejavu-sans-fonts liberation-sans-fonts",
			postgres: "sudo dnf install postgresql-server && sudo postgresql-setup --initdb",
		}
	case is("arch"):
		return installHints{
			chromium: "sudo pacman -S chromium, or " + env,
			fonts:    "sudo pacman -S noto-fonts ttf-dejavu ttf-liberation",
			postgres: "sudo pacman -S postgresql",
		}
	case is("alpine"):
		return installHints{
			chromium: "apk add chromium, or " + env,
			fonts:    "apk add font-noto font-dejavu font-liberation",
			postgres: "apk add postgresql",
		}
	}
	return installHints{
		chromium: "install your distribution's chromium package, or " + env,
		fonts:    "install the DejaVu, Liberation and Noto Sans fonts (fontconfig's fc-list should list them)",
		postgres: "install and start PostgreSQL",
	}
}
