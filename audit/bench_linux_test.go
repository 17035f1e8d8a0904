package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkSyncAppend is the disk's floor for one durable small append, the
// cost a lone appender cannot go below: a 300-byte write made durable by
// fdatasync or by O_DSYNC, into a file that grows (size metadata must reach
// the journal too), one pre-allocated with fallocate (unwritten extents: the
// first write to each still changes metadata on ext4), or one pre-filled
// with zeros (pure overwrite, data only).
func BenchmarkSyncAppend(b *testing.B) {
	rec := append(bytes.Repeat([]byte{'x'}, 299), '\n')
	const size = 64 << 20
	for _, prep := range []string{"grow", "fallocate", "zerofill"} {
		for _, how := range []string{"fdatasync", "odsync"} {
			b.Run(prep+"/"+how, func(b *testing.B) {
				flag := os.O_WRONLY | os.O_CREATE
				if how == "odsync" {
					flag |= syscall.O_DSYNC
				}
				p := filepath.Join(b.TempDir(), "seg")
				f, err := os.OpenFile(p, flag, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				switch prep {
				case "fallocate":
					err = syscall.Fallocate(int(f.Fd()), 0, 0, size)
				case "zerofill":
					err = writeZeros(f, 0, size)
				}
				if err == nil {
					err = f.Sync()
				}
				if err != nil {
					b.Fatal(err)
				}
				var off int64
				b.ResetTimer()
				for b.Loop() {
					if off+int64(len(rec)) > size {
						off = 0
					}
					if _, err := f.WriteAt(rec, off); err != nil {
						b.Fatal(err)
					}
					if how == "fdatasync" {
						if err := syscall.Fdatasync(int(f.Fd())); err != nil {
							b.Fatal(err)
						}
					}
					off += int64(len(rec))
				}
			})
		}
	}
}

func writeZeros(f *os.File, off, n int64) error {
	z := make([]byte, 1<<20)
	for n > 0 {
		c := min(n, int64(len(z)))
		if _, err := f.WriteAt(z[:c], off); err != nil {
			return err
		}
		off += c
		n -= c
	}
	return nil
}
