package config

// checkJoin validates the keys of the built-in join (processor.type=join):
// a table join (processor.table.topic) or, in stream mode, a join with a
// second stream (processor.join.stream.topic) within a window. Each key set
// where it means nothing is named.
func (c *Config) checkJoin(fail func(key, format string, args ...any)) {
	p := c.Processor
	if p.Type != ProcessorJoin {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"processor.join.stream.topic", p.JoinStream != ""},
			{"processor.join.window.ms", p.JoinWindow != 0},
			{"processor.join.grace.ms", p.JoinGrace != 0},
		} {
			if k.set {
				fail(k.key, "%s is for processor.type=join", k.key)
			}
		}
		return
	}
	if p.OutputTopic == "" {
		fail("processor.type", "processor.type=join requires processor.output.topic, where the enriched records go")
	}
	if p.JoinStream != "" {
		c.checkStreamJoin(fail)
		return
	}
	if p.TableTopic == "" {
		fail("processor.type", "processor.type=join requires processor.table.topic, the table to join, or processor.join.stream.topic, a stream to join")
	}
	if p.TableTopic != "" && (p.TableTopic == p.InputTopic || p.TableTopic == p.OutputTopic) {
		fail("processor.table.topic", "processor.table.topic %s is also the input or output topic", p.TableTopic)
	}
	if p.ChangelogTopic != "" {
		fail("processor.changelog.topic", "processor.changelog.topic has no effect with processor.type=join: the join keeps no store of its own (a co-partitioned table's topic is its store's changelog)")
	}
	if p.JoinKeyField != "" && !p.TableGlobal {
		fail("processor.join.key.field", "processor.join.key.field needs processor.table.global=true: a co-partitioned table is looked up by the record's key (another key may be in another task's partition)")
	}
	if p.Join == JoinOuter {
		fail("processor.join", "processor.join=outer needs processor.join.stream.topic: a table join emits input records only")
	}
	if p.JoinWindow != 0 {
		fail("processor.join.window.ms", "processor.join.window.ms needs processor.join.stream.topic: a table join has no window")
	}
	if p.JoinGrace != 0 {
		fail("processor.join.grace.ms", "processor.join.grace.ms needs processor.join.stream.topic: a table join has no window")
	}
}

// checkStreamJoin validates the built-in join in stream mode.
func (c *Config) checkStreamJoin(fail func(key, format string, args ...any)) {
	p := c.Processor
	if p.JoinStream == p.InputTopic || p.JoinStream == p.OutputTopic {
		fail("processor.join.stream.topic", "processor.join.stream.topic %s is also the input or output topic", p.JoinStream)
	}
	if p.TableTopic != "" {
		fail("processor.table.topic", "processor.table.topic and processor.join.stream.topic are both set: the join is with a table or with a stream")
	}
	if p.TableGlobal {
		fail("processor.table.global", "processor.table.global is for a table join, not with processor.join.stream.topic")
	}
	if p.JoinKeyField != "" {
		fail("processor.join.key.field", "processor.join.key.field is for a global table join: two streams join by the record key")
	}
	if p.ChangelogTopic != "" {
		fail("processor.changelog.topic", "processor.changelog.topic does not apply to a stream join: its store's changelog is <application.id>-join-changelog")
	}
	if p.JoinWindow <= 0 {
		fail("processor.join.window.ms", "processor.join.window.ms is required with processor.join.stream.topic: the largest time difference, in milliseconds (> 0), between two records that meet")
	}
}
