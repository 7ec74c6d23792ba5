//! A [`metrics::Recorder`] that hands the facade's histograms to an OpenTelemetry meter: the
//! library records its durations through the facade (it has no OpenTelemetry dependency), and
//! this is how they reach an OTLP collector. Each histogram becomes an instrument of the same
//! name, in the unit the library described (`s`), with the bucket boundaries the conventions
//! advise ([`DURATION_BUCKETS`]); each label set, the attributes of its measurements. Counters
//! and gauges are not bridged (the library records none).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_server::observe::DURATION_BUCKETS;
use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;

/// Installs the bridge to `meter` as the process's recorder (an error when one is installed
/// already).
pub(crate) fn install(meter: Meter) -> Result<(), Box<dyn std::error::Error>> {
    let bridge = Bridge {
        meter,
        units: Mutex::default(),
        instruments: Mutex::default(),
        series: Mutex::default(),
    };
    metrics::set_global_recorder(bridge).map_err(|_| "a metrics recorder is installed already".into())
}

/// The recorder: the meter, the units described, and the instruments and series made so far.
pub(crate) struct Bridge {
    meter: Meter,
    units: Mutex<HashMap<String, (Unit, SharedString)>>,
    instruments: Mutex<HashMap<String, opentelemetry::metrics::Histogram<f64>>>,
    series: Mutex<HashMap<Key, Arc<Series>>>,
}

/// One label set of one histogram.
struct Series {
    histogram: opentelemetry::metrics::Histogram<f64>,
    attributes: Vec<KeyValue>,
}

impl HistogramFn for Series {
    fn record(&self, value: f64) {
        self.histogram.record(value, &self.attributes);
    }
}

impl Bridge {
    /// The instrument of `name`, made on first use.
    fn instrument(&self, name: &str) -> opentelemetry::metrics::Histogram<f64> {
        let mut instruments = self.instruments.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(h) = instruments.get(name) {
            return h.clone();
        }
        let described = self
            .units
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned();
        let mut builder = self
            .meter
            .f64_histogram(name.to_owned())
            .with_boundaries(DURATION_BUCKETS.to_vec());
        if let Some((unit, description)) = described {
            let unit = match unit {
                Unit::Seconds => "s".to_owned(),
                other => other.as_canonical_label().to_owned(),
            };
            builder = builder.with_unit(unit).with_description(description.into_owned());
        }
        let histogram = builder.build();
        instruments.insert(name.to_owned(), histogram.clone());
        histogram
    }
}

impl Recorder for Bridge {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        if let Some(unit) = unit {
            let mut units = self.units.lock().unwrap_or_else(PoisonError::into_inner);
            units.insert(key.as_str().to_owned(), (unit, description));
        }
    }

    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = series.get(key) {
            return Histogram::from_arc(s.clone());
        }
        let made = Arc::new(Series {
            histogram: self.instrument(key.name()),
            attributes: key
                .labels()
                .map(|l| KeyValue::new(l.key().to_owned(), l.value().to_owned()))
                .collect(),
        });
        series.insert(key.clone(), made.clone());
        Histogram::from_arc(made)
    }
}
