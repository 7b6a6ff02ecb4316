package main

import (
	"context"

	"github.com/tollgate-dev/tollgate/bench/internal/report"
)

func benchPropagation(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	return nil, nil, nil
}
