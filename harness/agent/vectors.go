package agent

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// dbVectors keeps the knowledge-base vectors in the kb_vectors table:
// one row per agent, model and chunk text hash, the vector as
// little-endian float32 bytes. It is the retriever's VectorStore.
type dbVectors struct{ db *bun.DB }

var _ retrieval.VectorStore = dbVectors{}

// vectorBatch bounds the rows of one insert or delete.
const vectorBatch = 500

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte, dims int) ([]float32, bool) {
	if dims <= 0 || len(b) != 4*dims {
		return nil, false
	}
	v := make([]float32, dims)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}

func (d dbVectors) Vectors(ctx context.Context, agentID, model string) (map[string][]float32, error) {
	var rows []kbVectorRow
	if err := d.db.NewSelect().Model(&rows).Where("agent_id = ?", agentID).Where("model = ?", model).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("load vectors of agent %s: %w", agentID, err)
	}
	out := make(map[string][]float32, len(rows))
	for _, r := range rows {
		if v, ok := decodeVector(r.Vector, r.Dims); ok {
			out[r.Hash] = v
		}
	}
	return out, nil
}

func (d dbVectors) SaveVectors(ctx context.Context, agentID, model string, vecs map[string][]float32) error {
	rows := make([]kbVectorRow, 0, len(vecs))
	for h, v := range vecs {
		rows = append(rows, kbVectorRow{AgentID: agentID, Model: model, Hash: h, Dims: len(v), Vector: encodeVector(v)})
	}
	err := d.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += vectorBatch {
			batch := rows[start:min(start+vectorBatch, len(rows))]
			if _, err := sqldb.InsertNew(ctx, tx, batch, `"agent_id", "model", "hash"`); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store vectors of agent %s: %w", agentID, err)
	}
	return nil
}

func (d dbVectors) PruneVectors(ctx context.Context, agentID, model string, keep map[string]bool) error {
	fail := func(err error) error { return fmt.Errorf("remove outdated vectors of agent %s: %w", agentID, err) }
	if _, err := d.db.NewDelete().Model((*kbVectorRow)(nil)).Where("agent_id = ?", agentID).
		Where("model <> ?", model).Exec(ctx); err != nil {
		return fail(err)
	}
	var hashes []string
	if err := d.db.NewSelect().Model((*kbVectorRow)(nil)).Column("hash").Where("agent_id = ?", agentID).
		Where("model = ?", model).Scan(ctx, &hashes); err != nil {
		return fail(err)
	}
	var stale []string
	for _, h := range hashes {
		if !keep[h] {
			stale = append(stale, h)
		}
	}
	for start := 0; start < len(stale); start += vectorBatch {
		batch := stale[start:min(start+vectorBatch, len(stale))]
		if _, err := d.db.NewDelete().Model((*kbVectorRow)(nil)).Where("agent_id = ?", agentID).
			Where("model = ?", model).Where("hash IN (?)", bun.List(batch)).Exec(ctx); err != nil {
			return fail(err)
		}
	}
	return nil
}

func (d dbVectors) RemoveVectors(ctx context.Context, agentID string) error {
	if _, err := d.db.NewDelete().Model((*kbVectorRow)(nil)).Where("agent_id = ?", agentID).Exec(ctx); err != nil {
		return fmt.Errorf("remove vectors of agent %s: %w", agentID, err)
	}
	return nil
}
