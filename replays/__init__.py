"""The application around the event store: records in and out, read models, audit, simulation."""
