package webhook_test

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
)

// A client signs the body of its request with the channel's secret.
func ExampleSign() {
	body := []byte(`{"user_id":"alice","message":"What is the capital of France?"}`)
	req, err := http.NewRequest(http.MethodPost,
		"http://127.0.0.1:8080/api/channels/support_hook/webhook", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign("my-shared-secret", body))

	fmt.Println(webhook.SignatureHeader+":", req.Header.Get(webhook.SignatureHeader))
	// Output:
	// X-Gauntlet-Signature: sha256=cae06a0bbc5a660c25dcb9e2d842ad8c3df4fd6d169cbf7e76717189f513ccb1
}

// A callback receiver checks that a reply comes from the channel.
func ExampleVerify() {
	body := []byte(`{"channel_id":"support_hook","request_id":"1f2e","user_id":"alice","success":true,"response":"Paris."}`)
	sig := webhook.Sign("my-shared-secret", body) // as sent in X-Gauntlet-Signature

	fmt.Println(webhook.Verify("my-shared-secret", body, sig))
	fmt.Println(webhook.Verify("another-secret", body, sig))
	// Output:
	// true
	// false
}
