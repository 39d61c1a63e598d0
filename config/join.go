package config

// checkJoin validates the keys of the built-in join (processor.type=join).
func (c *Config) checkJoin(fail func(key, format string, args ...any)) {
	p := c.Processor
	if p.TableTopic == "" {
		fail("processor.type", "processor.type=join requires processor.table.topic, the table to join")
	}
	if p.OutputTopic == "" {
		fail("processor.type", "processor.type=join requires processor.output.topic, where the enriched records go")
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
}
