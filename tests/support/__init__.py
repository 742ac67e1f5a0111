"""Test support shared by every folder of tests/ (importable as `support`: pytest puts
tests/ on sys.path for the root conftest): the real collector process and senders
(`support.collector`), and the one way to wait for something asynchronous
(`support.polling.eventually`)."""
