package harnesstest_test

import (
	"context"
	"log/slog"

	"github.com/gauntlet-eval/gauntlet/harness"
)

type fixedModel string

func (m fixedModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: string(m)}}, nil
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
