package config

import "github.com/rackstream/rackstream/processor"

// checkGroupBy validates processor.group.by.field: it re-keys the input
// of a count or sum only, through the repartition topic
// <application.id>-<type>-repartition, which no configured topic may be.
func (c *Config) checkGroupBy(fail func(key, format string, args ...any)) {
	p := c.Processor
	if p.GroupByField == "" {
		return
	}
	if p.Type != ProcessorCount && p.Type != ProcessorSum {
		fail("processor.group.by.field", "processor.group.by.field is for processor.type count or sum, not %q", p.Type)
		return
	}
	if c.ApplicationID == "" {
		return
	}
	topic := processor.RepartitionTopic(c.ApplicationID, string(p.Type))
	for _, k := range []struct{ key, topic string }{
		{"processor.input.topic", p.InputTopic},
		{"processor.output.topic", p.OutputTopic},
		{"processor.changelog.topic", p.ChangelogTopic},
	} {
		if k.topic == topic {
			fail(k.key, "%s %s is the repartition topic of processor.group.by.field", k.key, topic)
		}
	}
}
