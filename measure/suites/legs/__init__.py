"""The runtimes the framing suite decodes each tier under, one module each: the Python leg always, the others
where the config enables them and the machine can run them (:mod:`~measure.suites.legs.registry` lists them).

Adding a leg: a module implementing :class:`~measure.suites.legs.contract.Leg`, its entry in
:data:`~measure.suites.legs.registry.LEGS`, a ``<key>_leg`` switch in :class:`~measure.suites.config.FramingConfig`,
and its test. A leg module never imports another leg (``tests/test_layers.py``); what two legs share lives in a
module that is not a leg (:mod:`~measure.suites.legs.process`, :mod:`~measure.suites.legs.browser`, the
``*_driver`` modules).
"""
