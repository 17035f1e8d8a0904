package main

import (
	"io"
	"os"
	"syscall"
)

// stdin returns a non-blocking, pollable standard input. Go's wasip1 port
// runs every goroutine on one thread, and os.Stdin is opened blocking: a
// read loop waiting for the next request would stall the goroutine that is
// writing the answer to the last one. With stdin non-blocking, the reader
// parks in the netpoller (poll_oneoff) and the rest of the server runs.
func stdin() io.ReadCloser {
	if err := syscall.SetNonblock(0, true); err != nil {
		return os.Stdin
	}
	return os.NewFile(0, "/dev/stdin")
}
