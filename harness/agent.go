package harness

// TimeLayout is the format of timestamps in resources: UTC,
// "YYYY-MM-DD HH:MM:SS".
const TimeLayout = "2006-01-02 15:04:05"

// Agent is a conversational assistant with a system prompt, tools, a
// knowledge base and messaging channels.
type Agent struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	SystemPrompt string `json:"system_prompt"`
	// Model overrides the configured model; nil means the configured one.
	Model     *string `json:"model"`
	CreatedAt string  `json:"created_at"`
}

// ChannelStatus is the state of a messaging channel.
type ChannelStatus string

// The channel states.
const (
	ChannelStopped ChannelStatus = "stopped"
	ChannelRunning ChannelStatus = "running"
	ChannelError   ChannelStatus = "error"
)

// ChannelConfig is a channel record: which messaging service connects to an
// agent, with its settings.
type ChannelConfig struct {
	ID        string         `json:"id"`
	AgentID   string         `json:"agent_id"`
	Type      string         `json:"type"`
	Name      string         `json:"name"`
	Config    map[string]any `json:"config"`
	Status    ChannelStatus  `json:"status"`
	LastError string         `json:"last_error"`
	CreatedAt string         `json:"created_at"`
}
