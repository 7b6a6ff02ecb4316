package main

import (
	"context"
	"errors"
	"io"
)

func runEval(_ context.Context, _ []string, _, _ io.Writer) error {
	return errors.New("not implemented yet")
}

func runTest(_ context.Context, _ []string, _, _ io.Writer) error {
	return errors.New("not implemented yet")
}
