package capture

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Memory is the resident memory of the browser's process tree, in bytes.
type Memory struct {
	Processes int   // the browser and its descendants (renderers, GPU, network, zygotes)
	RSS       int64 // sum of VmRSS now; shared pages are counted in each process
	PSS       int64 // sum of Pss now (shared pages split among their sharers); 0 when unreadable
	HWM       int64 // sum of VmHWM (each process's own peak); an upper bound of the tree's peak
}

// Memory reads /proc for the current browser's process tree. It returns the
// zero Memory when no browser runs or /proc is unavailable (non-Linux).
func (p *Pool) Memory() Memory {
	return treeMemory(p.BrowserPID())
}

// treeMemory sums VmRSS and VmHWM over root and its descendants.
func treeMemory(root int) Memory {
	var m Memory
	if root <= 0 {
		return m
	}
	children := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return m
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := parentPID(pid); pp > 0 {
			children[pp] = append(children[pp], pid)
		}
	}
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		rss, hwm, ok := statusMemory(pid)
		if !ok {
			continue
		}
		m.Processes++
		m.RSS += rss
		m.HWM += hwm
		m.PSS += pss(pid)
		stack = append(stack, children[pid]...)
	}
	return m
}

// parentPID reads the fourth field of /proc/pid/stat; the command name in
// field two may hold spaces and parentheses, so parsing starts after the
// last ')'.
func parentPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// statusMemory reads VmRSS and VmHWM (kB in the file) from /proc/pid/status.
func statusMemory(pid int) (rss, hwm int64, ok bool) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			rss = kB(line)
		case strings.HasPrefix(line, "VmHWM:"):
			hwm = kB(line)
		}
	}
	return rss, hwm, true
}

func kB(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n * 1024
}

// pss reads the proportional set size from /proc/pid/smaps_rollup.
func pss(pid int) int64 {
	return procBytes(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"), "Pss:")
}

// procBytes reads the kB field named by prefix from a /proc file, in
// bytes, or 0 when it cannot be read.
func procBytes(path, prefix string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			return kB(line)
		}
	}
	return 0
}

// tabBytes is what one open capture tab costs the machine, as DefaultSlots
// budgets it: a renderer with a typical page, its share of the browser's
// other processes, and the screenshot (bench/review measures about 100–200
// MB of PSS per tab).
const tabBytes = 256 << 20

// maxSlots bounds DefaultSlots on a large machine: one browser process
// serves every tab, and its own threads become the bottleneck past this.
const maxSlots = 8

// DefaultSlots is the number of captures a Pool runs at once when
// Options.MaxConcurrent is 0: one per core plus one (a capture spends part
// of its time waiting on the network and the browser process, so slightly
// more than one tab keeps a core busy), at least 2, and no more than the
// available memory holds at tabBytes each.
func DefaultSlots() int {
	n := max(runtime.NumCPU()+1, 2)
	if avail := memAvailable(); avail > 0 {
		n = min(n, max(int(avail/tabBytes), 1))
	}
	return min(n, maxSlots)
}

// memAvailable returns /proc/meminfo's MemAvailable in bytes, or 0 when it
// cannot be read (non-Linux).
func memAvailable() int64 { return procBytes("/proc/meminfo", "MemAvailable:") }
