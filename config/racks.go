package config

import "github.com/rackstream/rackstream/assignor"

// The rack-aware keys' allowed values, as the assignor checks them
// (assignor.Settings.Validate): the key table shows and applies them.
var (
	rackStrategies = assignor.RackStrategies
	maxRackCost    = int64(assignor.MaxRackCost)
)
