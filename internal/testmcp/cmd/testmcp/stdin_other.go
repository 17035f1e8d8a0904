//go:build !wasip1

package main

import (
	"io"
	"os"
)

func stdin() io.ReadCloser { return os.Stdin }
