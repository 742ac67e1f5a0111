-- Services already recorded, so the engine inserts only new ones.
SELECT service FROM services;
